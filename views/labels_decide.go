package views

// More are the texts of the intents page and of deciding with care: the
// approval's confirmation, a denial's reason, who decided first.
type More struct {
	NavIntents, IntentsTitle, IntentsLead, IntentName, IntentScope       string
	IntentMoney, IntentMoneyYes, IntentJournaled, IntentJournaledYes     string
	IntentJournaledNo, IntentServed, IntentOlder, IntentDescription      string
	TargetKind, IntentSource, IntentFields, IntentField                  string
	IntentFieldTitle, IntentReferences, IntentRefKind, IntentLimits      string
	IntentNoLimits, IntentSchema, IntentMap, IntentNoMap                 string
	LimitCurrencies, LimitAmountCeiling, LimitMaxItems, LimitMaxQuantity string
	LimitUnits, LineSum                                                  string

	ConfirmTitle, ConfirmLead, ConfirmApproveFmt, ConfirmCancel string
	CommentOrReason, ErrDenyReason, INN, KPP, ShopUnnamed       string // ShopUnnamed's %s: the setting that names the shop
	DirectionCharge, DirectionRefund                            string // %s: the shop
	ErrApprovalExpiredAt                                        string // %s: when
	ErrApprovalDecidedBy                                        string // %s: what, who, when

	// TargetKinds names the kinds of target system.
	TargetKinds map[string]string
}

func init() {
	russian.More = More{
		NavIntents: "Намерения", IntentsTitle: "Намерения",
		IntentsLead: "Что агентам разрешено просить: загруженные определения намерений (только просмотр). " +
			"Агент называет намерение и присылает данные; метод, объект или запрос системы он не выбирает.",
		IntentName: "Имя и версия", IntentScope: "Нужное право", IntentMoney: "Деньги",
		IntentMoneyYes: "да — ждёт согласования бухгалтера", IntentJournaled: "Журнал",
		IntentJournaledYes: "записывается в журнал; нужен ключ операции",
		IntentJournaledNo:  "только чтение: в журнал не пишется, ключ не нужен",
		IntentServed:       "действует", IntentOlder: "прежняя версия, ещё загружена",
		IntentDescription: "Описание", TargetKind: "вид", IntentSource: "Файл",
		IntentFields: "Поля запроса", IntentField: "Поле", IntentFieldTitle: "Название",
		IntentReferences: "Ссылки на объекты системы", IntentRefKind: "Вид объекта",
		IntentLimits: "Лимиты", IntentNoLimits: "Нет лимитов.",
		IntentSchema: "JSON Schema запроса", IntentMap: "Соответствие в системе (map)",
		IntentNoMap:     "Нет: встроенное намерение, его исполняет адаптер системы.",
		LimitCurrencies: "Валюты", LimitAmountCeiling: "Наибольшая сумма", LimitMaxItems: "Наибольшее число строк",
		LimitMaxQuantity: "Наибольшее количество в строке", LimitUnits: "Единицы измерения", LineSum: "Сумма строки",
		ConfirmTitle:         "Подтвердите одобрение",
		ConfirmLead:          "После подтверждения шлюз выполнит операцию один раз: деньги будут списаны. Проверьте сумму, клиента и назначение.",
		ConfirmApproveFmt:    "Подтверждаю: одобрить %s",
		ConfirmCancel:        "Назад, не решать",
		CommentOrReason:      "Комментарий; при отказе — причина (обязательно)",
		ErrDenyReason:        "Укажите причину отказа: она попадёт в журнал аудита. Решение не принято.",
		INN:                  "ИНН",
		KPP:                  "КПП",
		ShopUnnamed:          "магазин без названия в настройках (%s)",
		DirectionCharge:      "Списание с карты покупателя; получатель — %s",
		DirectionRefund:      "Возврат денег покупателю; возвращает — %s",
		ErrApprovalExpiredAt: "Срок согласования истёк %s — решение не принято, операция не будет выполнена.",
		ErrApprovalDecidedBy: "По этой операции уже принято решение: %s — %s, %s. Ваше решение не принято.",
		TargetKinds: map[string]string{
			"onec": "1С, HTTP-сервис", "onec_odata": "1С, OData", "bitrix24": "Битрикс24", "yookassa": "ЮKassa",
		},
	}
	english.More = More{
		NavIntents: "Intents", IntentsTitle: "Intents",
		IntentsLead: "What agents may ask for: the loaded intent definitions (read only). " +
			"An agent names an intent and sends its data; it never chooses a method, an object or a query of the system.",
		IntentName: "Name and version", IntentScope: "Right needed", IntentMoney: "Money",
		IntentMoneyYes: "yes — waits for an accountant's approval", IntentJournaled: "Journal",
		IntentJournaledYes: "journaled; needs an operation key",
		IntentJournaledNo:  "read only: not journaled, no key needed",
		IntentServed:       "served", IntentOlder: "older version, still loaded",
		IntentDescription: "Description", TargetKind: "kind", IntentSource: "File",
		IntentFields: "Request fields", IntentField: "Field", IntentFieldTitle: "Title",
		IntentReferences: "References to the system's objects", IntentRefKind: "Kind of object",
		IntentLimits: "Limits", IntentNoLimits: "No limits.",
		IntentSchema: "Request JSON Schema", IntentMap: "Mapping at the system (map)",
		IntentNoMap:     "None: a built-in intent, carried out by the system's adapter.",
		LimitCurrencies: "Currencies", LimitAmountCeiling: "Largest amount", LimitMaxItems: "Most lines",
		LimitMaxQuantity: "Largest quantity in a line", LimitUnits: "Units", LineSum: "Line total",
		ConfirmTitle:         "Confirm the approval",
		ConfirmLead:          "Once you confirm, the gateway runs the operation once: the money moves. Check the amount, the customer and the purpose.",
		ConfirmApproveFmt:    "Confirm: approve %s",
		ConfirmCancel:        "Back, do not decide",
		CommentOrReason:      "Comment; for a denial, the reason (required)",
		ErrDenyReason:        "Give the reason for the denial: it goes to the audit trail. Nothing was decided.",
		INN:                  "INN",
		KPP:                  "KPP",
		ShopUnnamed:          "a shop with no name in the configuration (%s)",
		DirectionCharge:      "Charge to the customer's card, paid to %s",
		DirectionRefund:      "Refund to the customer, paid back by %s",
		ErrApprovalExpiredAt: "The approval expired at %s: no decision was recorded and the operation will not run.",
		ErrApprovalDecidedBy: "This operation was already decided: %s by %s at %s. Your decision was not recorded.",
		TargetKinds: map[string]string{
			"onec": "1C, HTTP service", "onec_odata": "1C, OData", "bitrix24": "Bitrix24", "yookassa": "YooKassa",
		},
	}
}
