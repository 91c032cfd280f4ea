DROP TABLE process_steps;
DROP TABLE processes;
