DROP TABLE webhook_endpoints;
DROP TABLE webhook_deliveries;
