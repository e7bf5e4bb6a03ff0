CREATE TABLE `item` (
  `id` datetime(6) NOT NULL,
  `n` int NOT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci;
