package views

// PeopleTexts are the texts of a person's own page: how they are told
// when something waits for them, the channels they keep, and linking
// their Telegram chat.
type PeopleTexts struct {
	MyNotices, MyNoticesLead, MyNoticesOff              string
	ChannelsTitle, ChannelsSave, ChannelNoAddress       string
	MyEmail, MyEmailNone, MyEmailNote                   string
	TelegramTitle, TelegramLinked, TelegramNotLinked    string
	TelegramGetCode, TelegramUnlink, TelegramCodeFmt    string
	TelegramSendFmt, TelegramSendToBot, TelegramOpenBot string
	TelegramCodeOnce                                    string
}

func init() {
	russian.PeopleTexts = PeopleTexts{
		MyNotices:         "Мои уведомления",
		MyNoticesLead:     "Шлюз сообщает вам, когда что-то ждёт вас: платёж — согласования, операция — разбора. Сообщение говорит, что случилось, и ведёт на карточку; решают всегда здесь, войдя в систему.",
		MyNoticesOff:      "Уведомления не настроены: администратор включает их в разделе notify: конфигурации.",
		ChannelsTitle:     "Куда сообщать",
		ChannelsSave:      "Сохранить",
		ChannelNoAddress:  "нет адреса",
		MyEmail:           "Электронная почта",
		MyEmailNone:       "не указана",
		MyEmailNote:       "Адрес задаёт администратор (oncegate user contact --email).",
		TelegramTitle:     "Telegram",
		TelegramLinked:    "Чат привязан: сообщения приходят в него.",
		TelegramNotLinked: "Чат не привязан.",
		TelegramGetCode:   "Получить код",
		TelegramUnlink:    "Отвязать чат",
		TelegramCodeFmt:   "Ваш код: %s. Он действует один раз, до %s.",
		TelegramSendFmt:   "Отправьте боту %s сообщение",
		TelegramSendToBot: "Отправьте боту вашей фирмы сообщение",
		TelegramOpenBot:   "Открыть бота",
		TelegramCodeOnce:  "Бот ответит, когда чат будет привязан; обновите страницу.",
	}
	english.PeopleTexts = PeopleTexts{
		MyNotices:         "My notices",
		MyNoticesLead:     "The gateway tells you when something waits for you: a payment for approval, an operation for review. The message says what happened and links the card; deciding is always done here, signed in.",
		MyNoticesOff:      "Notices are not configured: an admin turns them on under notify: in the configuration.",
		ChannelsTitle:     "Where to tell me",
		ChannelsSave:      "Save",
		ChannelNoAddress:  "no address",
		MyEmail:           "E-mail",
		MyEmailNone:       "not given",
		MyEmailNote:       "An admin sets the address (oncegate user contact --email).",
		TelegramTitle:     "Telegram",
		TelegramLinked:    "A chat is linked: messages come to it.",
		TelegramNotLinked: "No chat is linked.",
		TelegramGetCode:   "Get a code",
		TelegramUnlink:    "Unlink the chat",
		TelegramCodeFmt:   "Your code: %s. It works once, until %s.",
		TelegramSendFmt:   "Send the bot %s the message",
		TelegramSendToBot: "Send your firm's bot the message",
		TelegramOpenBot:   "Open the bot",
		TelegramCodeOnce:  "The bot answers once the chat is linked; reload this page.",
	}
	russian.Events["user.telegram_linked"] = "чат Telegram привязан"
	russian.Events["user.channels_changed"] = "каналы уведомлений изменены"
	english.Events["user.telegram_linked"] = "Telegram chat linked"
	english.Events["user.channels_changed"] = "notice channels changed"
	russian.Flashes["channels_saved"] = "Каналы уведомлений сохранены."
	russian.Flashes["telegram_unlinked"] = "Чат Telegram отвязан."
	english.Flashes["channels_saved"] = "Your notice channels are saved."
	english.Flashes["telegram_unlinked"] = "The Telegram chat is unlinked."
}
