package views

// Records are the texts of the journal's pages for finding and reading:
// the operations' search, the audit trail's named events and its export
// for Excel, history in words, and the formats of an object's id.
type Records struct {
	Search, SearchHint, Filters, ColAmount, ColCustomer string

	AnyEvent, ExportExcel, ChainHead, ChainHeadNone string
	DetailNone                                      string
	// DetailFields names the fields of an event's detail.
	DetailFields map[string]string

	// Excel export columns.
	XTime, XActor, XEvent, XEventName, XOperation, XDetail, XHash string

	RepeatedFmt string // %d: how many times the same events repeated

	// ObjectFormats says the format of an object's id at each kind of
	// target; ErrObjectFormat refuses one that is not (%s: the format).
	ObjectFormats   map[string]string
	ErrObjectFormat string
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
		DetailNone:    "—",
		DetailFields: map[string]string{
			"intent": "Намерение", "fingerprint": "Отпечаток", "target": "Система", "request_id": "Запрос",
			"actor_id": "Инициатор", "attempt": "Попытка", "code": "Код", "error_code": "Код ошибки",
			"message": "Сообщение", "error_message": "Сообщение", "field": "Поле", "error_field": "Поле",
			"target_object_id": "Объект в системе", "object": "Объект", "comment": "Комментарий",
			"reason": "Причина", "found": "Найдено", "approval_id": "Согласование", "decided_by": "Решил",
			"duplicate_of": "Дубль операции", "duplicate_action": "Правило дублей", "name": "Имя",
			"agent": "Агент", "role": "Роль", "scopes": "Права", "user": "Пользователь", "count": "Количество",
			"ref": "Токен", "target_detail": "Ответ системы", "kind": "Вид", "lookup_failures": "Сверок без ответа",
			"status": "Состояние", "by": "Кто", "from": "Было", "to": "Стало",
		},
		XTime: "Время", XActor: "Кто", XEvent: "Событие", XEventName: "Код события",
		XOperation: "Операция", XDetail: "Подробности", XHash: "Хеш",

		RepeatedFmt: "повторилось %d раз",

		ObjectFormats: map[string]string{
			"onec":       "номер документа 1С: INV-, SO- или DOC- и UUID, например INV-1f0e…",
			"onec_odata": "Ref_Key документа: UUID, например 8f14e45f-ceea-567a-9a0e-3f5b0c2e1d4a",
			"bitrix24":   "числовой id в Битрикс24, например 1042",
			"yookassa":   "id платежа ЮKassa, например 2f8a1c3e-000f-5000-9000-1b2c3d4e5f60",
		},
		ErrObjectFormat: "Объект в системе указан не в её формате (нужен %s). Решение не принято.",
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
		DetailNone:    "—",
		DetailFields: map[string]string{
			"intent": "Intent", "fingerprint": "Fingerprint", "target": "Target", "request_id": "Request",
			"actor_id": "Initiator", "attempt": "Attempt", "code": "Code", "error_code": "Error code",
			"message": "Message", "error_message": "Message", "field": "Field", "error_field": "Field",
			"target_object_id": "Target object", "object": "Object", "comment": "Comment",
			"reason": "Reason", "found": "Found", "approval_id": "Approval", "decided_by": "Decided by",
			"duplicate_of": "Duplicate of", "duplicate_action": "Duplicate rule", "name": "Name",
			"agent": "Agent", "role": "Role", "scopes": "Scopes", "user": "User", "count": "Count",
			"ref": "Token", "target_detail": "Target's answer", "kind": "Kind", "lookup_failures": "Look-ups without an answer",
			"status": "Status", "by": "By", "from": "From", "to": "To",
		},
		XTime: "Time", XActor: "Who", XEvent: "Event", XEventName: "Event code",
		XOperation: "Operation", XDetail: "Details", XHash: "Hash",

		RepeatedFmt: "repeated %d times",

		ObjectFormats: map[string]string{
			"onec":       "a 1C document number: INV-, SO- or DOC- and a UUID, e.g. INV-1f0e…",
			"onec_odata": "the document's Ref_Key: a UUID, e.g. 8f14e45f-ceea-567a-9a0e-3f5b0c2e1d4a",
			"bitrix24":   "a numeric Bitrix24 id, e.g. 1042",
			"yookassa":   "a YooKassa payment id, e.g. 2f8a1c3e-000f-5000-9000-1b2c3d4e5f60",
		},
		ErrObjectFormat: "The target object is not in the target's format (%s). Nothing was decided.",
	}
}
