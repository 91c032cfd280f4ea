package views

// EventTexts are the texts of the events page: the notices the sources
// sent, whether the source confirmed each when read back, and the
// operation each started.
type EventTexts struct {
	NavEvents, EventsTitle, EventsLead, EventsEmpty       string
	EventReceived, EventSource, EventName, EventObject    string
	EventDeliveries, EventReadBacks, EventNext, EventRuns string
	EventStartedBy, EventAllOfSource                      string
	EventsStaleFmt, EventsDroppedFmt, EventsBannerOpen    string
	// EventStates names the states of a received notice.
	EventStates map[string]string
}

// EventStateLabel is a received notice's state for people.
func (l *Labels) EventStateLabel(s string) string { return orRaw(l.EventStates, s) }

func init() {
	russian.EventTexts = EventTexts{
		NavEvents: "События", EventsTitle: "События",
		EventsLead: "Системы сообщают о своих изменениях уведомлениями: ЮKassa — о платежах, Битрикс24 — о сделках и лидах. " +
			"Уведомлению не верят на слово: шлюз сначала читает объект в системе, которая его прислала, и запускает правило, только если она подтверждает сказанное. " +
			"«Отброшено» — система держит объект не таким, как сказано в уведомлении (оно могло быть подделано), и ничего не запущено. " +
			"«Ждёт проверки» — объект ещё не прочитан или система не ответила; его прочитают снова.",
		EventsEmpty:   "Уведомлений нет.",
		EventReceived: "Получено", EventSource: "Источник", EventName: "Событие", EventObject: "Объект",
		EventDeliveries: "Доставок", EventReadBacks: "Проверок", EventNext: "Следующая проверка", EventRuns: "Что запущено",
		EventStartedBy:   "Запущено уведомлением",
		EventAllOfSource: "Все уведомления источника",
		EventsDroppedFmt: "отброшено за сутки: %d",
		EventsStaleFmt:   "ждут проверки дольше 10 минут: %d",
		EventsBannerOpen: "Уведомления систем — %s. Откройте раздел «События».",
		EventStates: map[string]string{
			"pending": "ждёт проверки", "run": "запущено", "dropped": "отброшено", "failed": "не запущено: ошибка правила",
		},
	}
	english.EventTexts = EventTexts{
		NavEvents: "Events", EventsTitle: "Events",
		EventsLead: "Systems tell of their own changes by notices: YooKassa of payments, Bitrix24 of deals and leads. " +
			"A notice is not taken at its word: the gateway first reads the object back from the system that sent it, and runs the rule only when that system confirms what the notice said. " +
			"Dropped: the system does not hold the object as the notice said (it may be forged), and nothing ran. " +
			"Pending: not read back yet, or the system could not be read; it is read back again.",
		EventsEmpty:   "No notices.",
		EventReceived: "Received", EventSource: "Source", EventName: "Event", EventObject: "Object",
		EventDeliveries: "Deliveries", EventReadBacks: "Read-backs", EventNext: "Next read-back", EventRuns: "What it runs",
		EventStartedBy:   "Started by a notice",
		EventAllOfSource: "All notices of this source",
		EventsDroppedFmt: "dropped in the last 24 hours: %d",
		EventsStaleFmt:   "pending for more than 10 minutes: %d",
		EventsBannerOpen: "Notices of the systems — %s. Open Events.",
		EventStates: map[string]string{
			"pending": "pending", "run": "run", "dropped": "dropped", "failed": "failed: the rule could not run",
		},
	}
	// A notice dropped or failed is an audit event on its operation's key.
	russian.Events["event.dropped"] = "уведомление отброшено"
	russian.Events["event.failed"] = "уведомление не запустило правило"
	english.Events["event.dropped"] = "notice dropped"
	english.Events["event.failed"] = "notice ran no rule"
	// The codes a source's notice is refused with, before it is journaled.
	for code, text := range map[string][2]string{
		"EVENT_SOURCE_UNKNOWN": {"нет такого источника уведомлений", "no such source of notices"},
		"EVENT_UNKNOWN":        {"ни одно правило не срабатывает на это событие", "no rule runs on this event"},
		"EVENT_MALFORMED":      {"это не уведомление источника", "not a notice of the source"},
		"EVENT_SENDER_REFUSED": {"уведомление пришло не с адресов источника", "the notice came from outside the source's addresses"},
	} {
		russian.Errors[code], english.Errors[code] = text[0], text[1]
	}
}
