CREATE TABLE `event` (
  `id` int unsigned NOT NULL,
  `at` datetime(6) NOT NULL,
  PRIMARY KEY (`id`),
  KEY `idx_at` (`at`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci;
