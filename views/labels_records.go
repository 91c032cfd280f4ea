package views

// Records are the texts of the journal's pages for finding and reading:
// the operations' search, the audit trail's named events and its export
// for Excel, history in words, and the formats of an object's id.
type Records struct {
	Search, SearchHint, Filters, ColAmount, ColCustomer string

	AnyEvent, ExportExcel, ChainHead, ChainHeadNone string
	ChainHeadHint                                   string // %s: the command that checks it later
	DetailNone                                      string
	// DetailFields names the fields of an event's detail.
	DetailFields map[string]string

	// Excel export columns.
	XNumber, XTime, XActor, XEvent, XEventName, XOperation, XAmount, XDetail string

	RepeatedFmt string // %d: how many times the same events repeated

	// ObjectFormats says the format of an object's id at each kind of
	// target; ErrObjectFormat refuses one that is not (%s: the format).
	ObjectFormats   map[string]string
	ErrObjectFormat string
	ErrBadEvent     string
	// EventGroups names the choice of all events of one kind (the part
	// of their name before the dot).
	EventGroups map[string]string
}

func init() {
	russian.Records = Records{
		Search:      "Найти",
		SearchHint:  "заказ, объект (INV-…, id платежа, Ref_Key) или ключ",
		Filters:     "Фильтры",
		ColAmount:   "Сумма",
		ColCustomer: "Клиент",

		AnyEvent:      "все события",
		ExportExcel:   "Выгрузить для Excel",
		ChainHead:     "Вершина цепочки",
		ChainHeadNone: "событий нет",
		ChainHeadHint: "Запишите её: позже команда %s покажет, не удалены ли события после неё.",
		DetailNone:    "—",
		DetailFields: map[string]string{
			"intent": "Намерение", "fingerprint": "Отпечаток запроса", "target": "Система", "request_id": "Запрос агента",
			"actor_id": "Инициатор у агента", "attempt": "Попытка", "code": "Код", "field": "Поле",
			"object_id": "Объект в системе", "target_detail": "Ответ системы", "comment": "Комментарий",
			"reason": "Причина", "found": "Найдена в системе", "checked": "Подтверждена системой", "check": "Почему не подтверждена", "approval_id": "Согласование №", "kind": "Вид",
			"duplicate_of": "Дубль операции", "duplicate_action": "Правило дублей", "name": "Пользователь",
			"agent": "Агент", "role": "Роль", "scopes": "Права", "count": "Количество", "ref": "Отозвал",
			"token_id": "Токен №", "token_ids": "Токены №", "must_change": "Сменит пароль при входе",
			"addr": "Адрес", "from": "Было", "next_check_at": "Следующая сверка", "lookup_failures": "Сверок без ответа",
			"answer": "Ответ системы", "completed_before": "Завершены до", "oldest_key": "Самая старая",
			"oldest_completed_at": "Завершена", "newest_key": "Самая новая", "newest_completed_at": "Завершена",
			"password_confirmed": "Выдавший подтвердил пароль", "sessions_ended": "Завершено сеансов",
			"self": "Сменил сам", "was_required": "Смена была обязательной",
		},

		XNumber: "№", XTime: "Время", XActor: "Кто", XEvent: "Событие", XEventName: "Код события",
		XOperation: "Операция", XAmount: "Сумма", XDetail: "Подробности",

		RepeatedFmt: "повторов подряд: %d",

		ObjectFormats: map[string]string{
			"onec":       "вид документа (INV-, SO-, DOC-) и UUID ссылки, например INV-3f1c9a2e-7b4d-4c1a-9e2f-5d8b6a0c4e71",
			"onec_odata": "Ref_Key документа (UUID), например 8f14e45f-ceea-567a-9a0e-3f5b0c2e1d4a",
			"bitrix24":   "числовой id в Битрикс24, например 1042",
			"yookassa":   "id платежа ЮKassa, например 2f8a1c3e-000f-5000-9000-1b2c3d4e5f60",
		},
		ErrObjectFormat: "Объект в системе указан не в её формате: нужен %s. Решение не принято.",
		ErrBadEvent:     "Такого события нет: выберите его из списка.",
		EventGroups: map[string]string{
			"operation": "все события операций", "approval": "все согласования", "user": "все действия пользователей",
			"token": "все события токенов", "retention": "удаление по сроку хранения",
		},
	}
	english.Records = Records{
		Search:      "Find",
		SearchHint:  "order, object (INV-…, payment id, Ref_Key) or key",
		Filters:     "Filters",
		ColAmount:   "Amount",
		ColCustomer: "Customer",

		AnyEvent:      "all events",
		ExportExcel:   "Export for Excel",
		ChainHead:     "Chain head",
		ChainHeadNone: "no events",
		ChainHeadHint: "Note it: later, %s shows whether events after it were removed.",
		DetailNone:    "—",
		DetailFields: map[string]string{
			"intent": "Intent", "fingerprint": "Request fingerprint", "target": "Target", "request_id": "Agent's request",
			"actor_id": "Initiator at the agent", "attempt": "Attempt", "code": "Code", "field": "Field",
			"object_id": "Target object", "target_detail": "Target's answer", "comment": "Comment",
			"reason": "Reason", "found": "Found at the target", "checked": "Confirmed by the target", "check": "Why not confirmed", "approval_id": "Approval no.", "kind": "Kind",
			"duplicate_of": "Duplicate of", "duplicate_action": "Duplicate rule", "name": "User",
			"agent": "Agent", "role": "Role", "scopes": "Scopes", "count": "Count", "ref": "Revoked by",
			"token_id": "Token no.", "token_ids": "Token nos.", "must_change": "Changes password at sign-in",
			"addr": "Address", "from": "Was", "next_check_at": "Next look-up", "lookup_failures": "Look-ups without an answer",
			"answer": "Target's answer", "completed_before": "Completed before", "oldest_key": "Oldest",
			"oldest_completed_at": "Completed", "newest_key": "Newest", "newest_completed_at": "Completed",
			"password_confirmed": "Granting person confirmed their password", "sessions_ended": "Sessions ended",
			"self": "Changed by themselves", "was_required": "The change was required",
		},

		XNumber: "No.", XTime: "Time", XActor: "Who", XEvent: "Event", XEventName: "Event code",
		XOperation: "Operation", XAmount: "Amount", XDetail: "Details",

		RepeatedFmt: "repeated %d times",

		ObjectFormats: map[string]string{
			"onec":       "the document's kind (INV-, SO-, DOC-) and its reference's UUID, e.g. INV-3f1c9a2e-7b4d-4c1a-9e2f-5d8b6a0c4e71",
			"onec_odata": "the document's Ref_Key (a UUID), e.g. 8f14e45f-ceea-567a-9a0e-3f5b0c2e1d4a",
			"bitrix24":   "a numeric Bitrix24 id, e.g. 1042",
			"yookassa":   "a YooKassa payment id, e.g. 2f8a1c3e-000f-5000-9000-1b2c3d4e5f60",
		},
		ErrObjectFormat: "The target object is not in the target's format: it takes %s. Nothing was decided.",
		ErrBadEvent:     "No such event: choose one from the list.",
		EventGroups: map[string]string{
			"operation": "all operation events", "approval": "all approvals", "user": "all user actions",
			"token": "all token events", "retention": "purges by retention",
		},
	}
}
