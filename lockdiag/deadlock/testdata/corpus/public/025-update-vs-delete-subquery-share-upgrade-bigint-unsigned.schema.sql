CREATE TABLE `order_pay_status` (
  `id` bigint(11) unsigned NOT NULL AUTO_INCREMENT COMMENT '自增主键',
  `curr_status` tinyint(1) DEFAULT NULL COMMENT '当前支付状态，值来自account_statement.pay_status',
  `status` tinyint(1) DEFAULT NULL COMMENT '1:有效 0：无效',
  PRIMARY KEY (`id`),
) ENGINE=InnoDB AUTO_INCREMENT=42 DEFAULT CHARSET=utf8 COMMENT='支付状态表';
