DROP TABLE notices;
ALTER TABLE users DROP COLUMN telegram_chat_id;
ALTER TABLE users DROP COLUMN email;
