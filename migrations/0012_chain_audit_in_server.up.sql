-- Nothing changes in a SQLite journal: its one writer chains the audit
-- events itself, with no round trips to save. (A PostgreSQL journal's
-- server chains them from this version on; both keep one version for one
-- schema.)
SELECT 1;
