package views

// Finish are the texts that let a person finish a decision: whom a
// payment goes to, the invoice of the same order, what the target said
// on the last look-up, and whose access a revocation ends.
type Finish struct {
	Shop, OrderInvoice                     string
	LastLookup, LastLookupAt, LookupFailed string
	RevokeTitle, RevokeLead, RevokeConfirm string // %s: the agent
	RevokeCancel, RevokeTokenOf            string
	RevokeWaiting                          string // %d: waiting approvals of the agent
	ReviewAmount, ReviewCustomer           string
	ReviewApprover                         string
	RerunWarning, RerunConfirm             string
	ErrRerunConfirm                        string
	// The check of a typed object id at the target: %[1]s the target,
	// %[2]s the id, %[3]s the target's reason, %[4]s UncheckedConfirm;
	// ErrObjectTaken's %[1]s is the id, %[2]s the operation that has it.
	ErrObjectAbsent, ErrObjectNotEffect string
	ErrObjectUnchecked, ErrObjectTaken  string
	UncheckedConfirm                    string
	CannotCheck, NoAnswer               string // why a target could not tell
}

func init() {
	russian.Finish = Finish{
		Shop:               "Магазин",
		OrderInvoice:       "Счёт 1С по заказу",
		LastLookup:         "Последний ответ системы",
		LastLookupAt:       "последняя сверка",
		LookupFailed:       "Сверок без ответа",
		RevokeTitle:        "Отозвать доступ агента?",
		RevokeLead:         "Агент «%s» больше не сможет обращаться к шлюзу с этим токеном. Уже принятые операции не отменяются. Отменить отзыв нельзя: агенту понадобится новый токен.",
		RevokeConfirm:      "Отозвать токен агента «%s»",
		RevokeCancel:       "Назад, не отзывать",
		RevokeTokenOf:      "Токен",
		RevokeWaiting:      "Ждут согласования его платежей: %d. Бухгалтер увидит, что агент отключён.",
		ReviewAmount:       "Сумма",
		ReviewCustomer:     "Клиент",
		ReviewApprover:     "Одобрил",
		RerunWarning:       "Это платёж: «не найдена» значит, что при следующем повторе агента деньги будут списаны снова. Выбирайте, только если проверили в личном кабинете ЮKassa, что платежа нет.",
		RerunConfirm:       "Я проверил: платежа нет, его можно отправить снова",
		ErrRerunConfirm:    "Платёж может быть списан второй раз: подтвердите, что проверили его отсутствие в платёжной системе. Решение не принято.",
		ErrObjectAbsent:    "В системе «%[1]s» нет объекта %[2]s. Проверьте ID. Решение не принято.",
		ErrObjectNotEffect: "Объект %[2]s в системе «%[1]s» не может быть результатом этой операции: %[3]s. Решение не принято.",
		ErrObjectUnchecked: "Система «%[1]s» не смогла подтвердить объект %[2]s (%[3]s). Проверьте его в системе сами и отметьте «%[4]s» — тогда решение будет записано под вашу ответственность.",
		ErrObjectTaken:     "Объект %[1]s уже записан как результат другой операции: %[2]s. Решение не принято.",
		UncheckedConfirm:   "Я проверил объект в системе сам",
		CannotCheck:        "она не умеет читать объект по ID",
		NoAnswer:           "нет ответа",
	}
	english.Finish = Finish{
		Shop:               "Shop",
		OrderInvoice:       "1C invoice for the order",
		LastLookup:         "The target's last answer",
		LastLookupAt:       "last look-up",
		LookupFailed:       "Look-ups without an answer",
		RevokeTitle:        "Revoke the agent's access?",
		RevokeLead:         "The agent “%s” can no longer call the gateway with this token. Operations already accepted are not undone. A revocation cannot be undone: the agent will need a new token.",
		RevokeConfirm:      "Revoke the token of agent “%s”",
		RevokeCancel:       "Back, do not revoke",
		RevokeTokenOf:      "Token",
		RevokeWaiting:      "Its payments waiting for approval: %d. The accountant will see the agent is cut off.",
		ReviewAmount:       "Amount",
		ReviewCustomer:     "Customer",
		ReviewApprover:     "Approved by",
		RerunWarning:       "This is a payment: “not found” means the agent's next retry charges the money again. Choose it only after checking at the payment provider that there is no such payment.",
		RerunConfirm:       "I checked: there is no such payment; it may be sent again",
		ErrRerunConfirm:    "The payment may be charged a second time: confirm you checked that the payment provider has none. Nothing was decided.",
		ErrObjectAbsent:    "%[1]s has no object %[2]s. Check the id. Nothing was decided.",
		ErrObjectNotEffect: "Object %[2]s at %[1]s cannot be this operation's effect: %[3]s. Nothing was decided.",
		ErrObjectUnchecked: "%[1]s could not confirm object %[2]s (%[3]s). Check it at the target yourself and tick “%[4]s” to record the decision on your word.",
		ErrObjectTaken:     "Object %[1]s is already the effect of another operation: %[2]s. Nothing was decided.",
		UncheckedConfirm:   "I checked the object at the target myself",
		CannotCheck:        "it has no read of an object by its id",
		NoAnswer:           "no answer",
	}
}
