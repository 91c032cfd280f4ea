DROP TABLE telegram_links;
ALTER TABLE users DROP COLUMN notify_off;
