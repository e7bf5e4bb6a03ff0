CREATE TABLE `seat` (
  `id` int(11) NOT NULL,
  `taken_by` varchar(8) DEFAULT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
