package views

// Cards are the texts that make a card say what to check: the invoice of
// the order by its number in 1C, who the customer is and which system
// said so, where to look for an operation at its target, a target's
// error in words, and whose password is still someone else's.
type Cards struct {
	// OrderInvoiceMoreFmt: %s is InvoiceForms' count («ещё 2 счёта по
	// заказу»); InvoiceForms are the word after 1, 2–4 and 5.
	OrderInvoiceMoreFmt                    string
	InvoiceForms                           [3]string
	OrderInvoiceNone, OrderInvoiceNoneHint string
	InvoiceNoNumber, InvoiceMismatch       string
	InvoiceNumber                          string
	// CustomerFromFmt: %s is the system the name is from.
	CustomerFromFmt, LookupUnchecked string
	// AccountHint says whose the saved payment method is.
	AccountHint string

	// Where to look for an operation at its target, by the kind of
	// target: %s is the operation key, or the Ref_Key for onec_odata.
	SearchAt string
	// TargetChanged heads the values the target stored otherwise than sent.
	TargetChanged string
	SearchByKind  map[string]string
	SearchRaw     string // the raw text one click away
	RequestTitle  string
	ZoneServerFmt string // %s: the zone; the server's own, no time_zone set

	// A target's error for people: %[1]s the target, %[2]d the HTTP status.
	TargetHTTP5xx, TargetHTTP4xx, TargetHTTP429, TargetTimeout, TargetRefused string
	TargetOther, TargetGeneric                                                string

	// CardHeldFmt: %d operations held as suspected duplicates.
	CardHeldFmt string

	// Users: whose password was chosen for them and is still to change.
	PasswordCol, PasswordToChoose, PasswordOwn string
}

func init() {
	russian.Cards = Cards{
		OrderInvoiceMoreFmt:  "ещё %s по заказу",
		InvoiceForms:         [3]string{"счёт", "счёта", "счетов"},
		OrderInvoiceNone:     "счёта по заказу в 1С нет",
		OrderInvoiceNoneHint: "шлюз не создавал счёт по этому заказу: проверьте в 1С, за что списываются деньги",
		InvoiceNoNumber:      "номер в 1С ещё не известен",
		InvoiceMismatch:      "сумма счёта не равна сумме платежа",
		InvoiceNumber:        "№",
		CustomerFromFmt:      "по данным: %s",
		LookupUnchecked:      "не удалось проверить",
		AccountHint:          "покупателя, сохранён у платёжной системы; не счёт 1С и не магазин",

		SearchAt:      "Где искать",
		TargetChanged: "Система сохранила не то, что было отправлено: проверьте эти поля в ней",
		SearchByKind: map[string]string{
			"onec":       "в 1С: запись регистра «ОперацииOncegate» с ключом операции %s",
			"onec_odata": "в 1С: документ с Ref_Key %s",
			"bitrix24":   "в Битрикс24: дела с ORIGINATOR_ID = oncegate и ORIGIN_ID = %s",
			"yookassa":   "в ЮKassa: платёж с metadata.operation_key = %s",
		},
		SearchRaw:     "исходный текст",
		RequestTitle:  "Запрос агента",
		ZoneServerFmt: "%s — пояс сервера (time_zone не задан)",

		TargetHTTP5xx: "%[1]s временно недоступен (HTTP %[2]d)",
		TargetHTTP4xx: "%[1]s отклонил запрос (HTTP %[2]d)",
		TargetHTTP429: "%[1]s просит подождать: слишком много запросов (HTTP %[2]d)",
		TargetTimeout: "%[1]s не ответил вовремя",
		TargetRefused: "%[1]s недоступен: соединение не установлено",
		TargetOther:   "%[1]s ответил ошибкой",
		TargetGeneric: "Внешний сервис",

		CardHeldFmt: "Кроме них, на проверке дублей: %d.",
		PasswordCol: "Пароль", PasswordToChoose: "ещё не выбрал свой", PasswordOwn: "свой",
	}
	english.Cards = Cards{
		OrderInvoiceMoreFmt:  "%s for the order",
		InvoiceForms:         [3]string{"more invoice", "more invoices", "more invoices"},
		OrderInvoiceNone:     "no 1C invoice for the order",
		OrderInvoiceNoneHint: "the gateway made no invoice for this order: check in 1C what the money is for",
		InvoiceNoNumber:      "its 1C number is not known yet",
		InvoiceMismatch:      "the invoice's total is not the payment's amount",
		InvoiceNumber:        "No.",
		CustomerFromFmt:      "according to %s",
		LookupUnchecked:      "could not be checked",
		AccountHint:          "the customer's, kept by the payment provider; not a 1C invoice and not the shop",

		SearchAt:      "Where to look",
		TargetChanged: "The system stored something other than what was sent: check these fields there",
		SearchByKind: map[string]string{
			"onec":       "in 1C: the record of the «ОперацииOncegate» register with operation key %s",
			"onec_odata": "in 1C: the document with Ref_Key %s",
			"bitrix24":   "in Bitrix24: activities with ORIGINATOR_ID = oncegate and ORIGIN_ID = %s",
			"yookassa":   "in YooKassa: the payment with metadata.operation_key = %s",
		},
		SearchRaw:     "raw text",
		RequestTitle:  "The agent's request",
		ZoneServerFmt: "%s, the server's zone (no time_zone set)",

		TargetHTTP5xx: "%[1]s is temporarily unavailable (HTTP %[2]d)",
		TargetHTTP4xx: "%[1]s refused the request (HTTP %[2]d)",
		TargetHTTP429: "%[1]s asks to wait: too many requests (HTTP %[2]d)",
		TargetTimeout: "%[1]s did not answer in time",
		TargetRefused: "%[1]s is unreachable: no connection",
		TargetOther:   "%[1]s answered with an error",
		TargetGeneric: "The target",

		CardHeldFmt: "Besides, held as suspected duplicates: %d.",
		PasswordCol: "Password", PasswordToChoose: "yet to choose their own", PasswordOwn: "their own",
	}
}
