DROP INDEX operations_target_object;
