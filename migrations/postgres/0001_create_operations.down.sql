DROP TABLE operations;
