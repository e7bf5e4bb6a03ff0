CREATE TABLE `ext_ref` (
  `id` bigint(20) unsigned NOT NULL,
  `ext` int(10) unsigned NOT NULL,
  PRIMARY KEY (`id`),
  KEY `idx_ext` (`ext`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
