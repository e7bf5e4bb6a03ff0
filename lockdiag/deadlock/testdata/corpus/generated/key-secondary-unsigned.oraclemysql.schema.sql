CREATE TABLE `ext_ref` (
  `id` bigint unsigned NOT NULL,
  `ext` int unsigned NOT NULL,
  PRIMARY KEY (`id`),
  KEY `idx_ext` (`ext`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci;
