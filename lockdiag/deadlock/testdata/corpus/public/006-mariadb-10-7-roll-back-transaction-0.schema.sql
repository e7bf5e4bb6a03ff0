create table t1 (id int primary key, f1 int);
