package views

// WebhookTexts are the texts of the webhooks page and its banner.
type WebhookTexts struct {
	NavWebhooks, WebhooksTitle, WebhooksLead, WebhooksNone, WebhookEvents string
	WebhookNoDeliveries, WebhookAnswer, WebhookNext, WebhookResend        string
	WebhookResume, WebhookGone, WebhookPaused, WebhookBannerFmt           string
	// DeliveryStates names the states of a delivery.
	DeliveryStates map[string]string
	// NoticesFailingFmt warns of a channel of notices that fails: %[1]s
	// the channel, %[2]s its last error.
	NoticesFailingFmt string
	// Channels names the channels of notices.
	Channels map[string]string
}

// ChannelLabel is a channel of notices for people.
func (l *Labels) ChannelLabel(c string) string { return orRaw(l.Channels, c) }

// DeliveryStateLabel is a delivery's state for people.
func (l *Labels) DeliveryStateLabel(s string) string { return orRaw(l.DeliveryStates, s) }

func init() {
	russian.WebhookTexts = WebhookTexts{
		NavWebhooks: "Вебхуки", WebhooksTitle: "Вебхуки",
		WebhooksLead:        "Системы фирмы узнают об исходах операций по вебхукам. Каждая отправка записана в журнал вместе с изменением, о котором сообщает, и повторяется, пока получатель не ответит.",
		WebhooksNone:        "Вебхуки не настроены (webhooks: в конфигурации).",
		WebhookEvents:       "События",
		WebhookNoDeliveries: "Отправок пока нет.",
		WebhookAnswer:       "Ответ получателя", WebhookNext: "Следующая попытка",
		WebhookResend: "Отправить снова", WebhookResume: "Возобновить",
		WebhookGone:       "Получатель ответил 410 Gone: отправки остановлены.",
		WebhookPaused:     "Приостановлен:",
		WebhookBannerFmt:  "Вебхуки не доходят: %s. Откройте раздел «Вебхуки».",
		DeliveryStates:    map[string]string{"pending": "ждёт отправки", "delivered": "доставлен", "failed": "не доставлен"},
		NoticesFailingFmt: "Уведомления не доходят (%[1]s): %[2]s. Они повторяются; проверьте настройку notify:.",
		Channels:          map[string]string{"email": "e-mail", "telegram": "Telegram", "bitrix24": "Битрикс24"},
	}
	english.WebhookTexts = WebhookTexts{
		NavWebhooks: "Webhooks", WebhooksTitle: "Webhooks",
		WebhooksLead:        "The firm's systems hear operations' outcomes by webhook. Each delivery is journaled with the change it reports and retried until the receiver answers.",
		WebhooksNone:        "No webhooks are configured (webhooks: in the configuration).",
		WebhookEvents:       "Events",
		WebhookNoDeliveries: "No deliveries yet.",
		WebhookAnswer:       "Receiver's answer", WebhookNext: "Next try",
		WebhookResend: "Send again", WebhookResume: "Resume",
		WebhookGone:       "The receiver answered 410 Gone: deliveries stopped.",
		WebhookPaused:     "Paused:",
		WebhookBannerFmt:  "Webhooks are not getting through: %s. Open Webhooks.",
		DeliveryStates:    map[string]string{"pending": "waiting to be sent", "delivered": "delivered", "failed": "not delivered"},
		NoticesFailingFmt: "Notices are not getting through (%[1]s): %[2]s. They are retried; check notify: in the configuration.",
		Channels:          map[string]string{"email": "e-mail", "telegram": "Telegram", "bitrix24": "Bitrix24"},
	}
}
