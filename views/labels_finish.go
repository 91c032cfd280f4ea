package views

// Finish are the texts that let a person finish a decision: whom a
// payment goes to, the invoice of the same order, what the target said
// on the last look-up, and whose access a revocation ends.
type Finish struct {
	Shop, OrderInvoice, OrderInvoiceOther  string
	LastLookup, LastLookupAt, LookupFailed string
	RevokeTitle, RevokeLead, RevokeConfirm string // %s: the agent
	RevokeCancel, RevokeTokenOf            string
	RevokeWaiting                          string // %d: waiting approvals of the agent
	ReviewAmount, ReviewCustomer           string
	ReviewApprover                         string
	RerunWarning, RerunConfirm             string
	ErrRerunConfirm                        string
}

func init() {
	russian.Finish = Finish{
		Shop:              "Магазин",
		OrderInvoice:      "Счёт 1С по заказу",
		OrderInvoiceOther: "ещё счета по заказу",
		LastLookup:        "Последний ответ системы",
		LastLookupAt:      "последняя сверка",
		LookupFailed:      "Сверок без ответа",
		RevokeTitle:       "Отозвать доступ агента?",
		RevokeLead:        "Агент «%s» больше не сможет обращаться к шлюзу с этим токеном. Уже принятые операции не отменяются. Отменить отзыв нельзя: агенту понадобится новый токен.",
		RevokeConfirm:     "Отозвать токен агента «%s»",
		RevokeCancel:      "Назад, не отзывать",
		RevokeTokenOf:     "Токен",
		RevokeWaiting:     "Ждут согласования его платежей: %d. Бухгалтер увидит, что агент отключён.",
		ReviewAmount:      "Сумма",
		ReviewCustomer:    "Клиент",
		ReviewApprover:    "Одобрил",
		RerunWarning:      "Это платёж: «не найдена» значит, что при следующем повторе агента деньги будут списаны снова. Выбирайте, только если проверили в личном кабинете ЮKassa, что платежа нет.",
		RerunConfirm:      "Я проверил: платежа нет, его можно отправить снова",
		ErrRerunConfirm:   "Платёж может быть списан второй раз: подтвердите, что проверили его отсутствие в платёжной системе. Решение не принято.",
	}
	english.Finish = Finish{
		Shop:              "Shop",
		OrderInvoice:      "1C invoice for the order",
		OrderInvoiceOther: "more invoices for the order",
		LastLookup:        "The target's last answer",
		LastLookupAt:      "last look-up",
		LookupFailed:      "Look-ups without an answer",
		RevokeTitle:       "Revoke the agent's access?",
		RevokeLead:        "The agent “%s” can no longer call the gateway with this token. Operations already accepted are not undone. A revocation cannot be undone: the agent will need a new token.",
		RevokeConfirm:     "Revoke the token of agent “%s”",
		RevokeCancel:      "Back, do not revoke",
		RevokeTokenOf:     "Token",
		RevokeWaiting:     "Its payments waiting for approval: %d. The accountant will see the agent is cut off.",
		ReviewAmount:      "Amount",
		ReviewCustomer:    "Customer",
		ReviewApprover:    "Approved by",
		RerunWarning:      "This is a payment: “not found” means the agent's next retry charges the money again. Choose it only after checking at the payment provider that there is no such payment.",
		RerunConfirm:      "I checked: there is no such payment; it may be sent again",
		ErrRerunConfirm:   "The payment may be charged a second time: confirm you checked that the payment provider has none. Nothing was decided.",
	}
}
