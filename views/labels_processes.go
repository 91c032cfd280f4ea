package views

// ProcessTexts are the texts of the processes' pages: a process of
// several steps, each an operation, what undid them, and what a person
// does when undoing one needs them.
type ProcessTexts struct {
	NavProcesses, ProcessesTitle, ProcessesLead, ProcessesEmpty string
	ProcessTitle, Steps, StepCol, Undo, UndoNone, UndoManual    string
	StepPending, FailedStep, WaitsAt, NeedsPersonLead           string
	UndoAgain, UndoAgainHint, UndoneByHand, UndoneByHandHint    string
	ErrNoteRequired, ErrNotInReview                             string
	// On an approval card of a step: StepOfFmt names the step (%s);
	// MadeFmt what an earlier step made (%[1]s intent, %[2]s object,
	// %[3]s system, %[4]s when); OnDenyFmt what a denial undoes (%s the
	// undoings, joined), OnDenyNothing when it undoes nothing.
	StepOfFmt, MadeFmt, OnDenyFmt, OnDenyNothing, UndoOfFmt string
	// IdleFor heads the filter of processes not moved for so long.
	IdleFor string
	// ProcessStates names the states of a process.
	ProcessStates map[string]string
}

// ProcessStateLabel is the name of a process's state for people.
func (l *Labels) ProcessStateLabel(s string) string { return orRaw(l.ProcessStates, s) }

func init() {
	russian.ProcessTexts = ProcessTexts{
		NavProcesses: "Процессы", ProcessesTitle: "Процессы",
		ProcessesLead:  "Процесс — несколько шагов в разных системах, каждый шаг — отдельная операция. Если шаг не удался окончательно, выполненные шаги отменяются так, как объявила фирма.",
		ProcessesEmpty: "Процессов нет.",
		ProcessTitle:   "Процесс", Steps: "Шаги", StepCol: "Шаг", Undo: "Отмена шага",
		UndoNone: "не отменяется", UndoManual: "отменяет человек", StepPending: "ещё не выполнялся",
		FailedStep: "Не удался шаг", WaitsAt: "Ждёт на шаге",
		NeedsPersonLead:  "Отмену этого шага должен завершить человек. Если причину отказа устранили, отмените шаг снова; если вы отменили его сами в системе — отметьте это.",
		UndoAgain:        "Отменить шаг снова",
		UndoAgainHint:    "новая попытка отмены, под новым ключом",
		UndoneByHand:     "Отменено вручную",
		UndoneByHandHint: "вы сами отменили результат шага в системе",
		ErrNoteRequired:  "Напишите, что сделано и почему.",
		ErrNotInReview:   "Процесс уже не ждёт человека.",
		StepOfFmt:        "шаг «%s»",
		IdleFor:          "Без движения не меньше",
		MadeFmt:          "%[1]s: %[2]s в %[3]s, %[4]s",
		OnDenyFmt:        "Если отклонить: %s.",
		OnDenyNothing:    "Если отклонить, отменять нечего.",
		UndoOfFmt:        "«%[1]s» будет отменён: %[2]s",
		ProcessStates: map[string]string{
			"started": "выполняется", "awaiting_approval": "ждёт согласования", "unknown": "исход шага неизвестен",
			"succeeded": "выполнен", "compensating": "отменяются шаги", "compensated": "отменён",
			"needs_review": "нужен человек", "rejected": "отклонён",
		},
	}
	english.ProcessTexts = ProcessTexts{
		NavProcesses: "Processes", ProcessesTitle: "Processes",
		ProcessesLead:  "A process is several steps in different systems, each step an operation of its own. When a step fails for good, the completed steps are undone the way the firm declared.",
		ProcessesEmpty: "No processes.",
		ProcessTitle:   "Process", Steps: "Steps", StepCol: "Step", Undo: "Undoing the step",
		UndoNone: "not undone", UndoManual: "undone by a person", StepPending: "not run yet",
		FailedStep: "Failed step", WaitsAt: "Waits at step",
		NeedsPersonLead:  "A person must finish undoing this step. If what refused it was put right, undo the step again; if you undid it yourself in the system, record that.",
		UndoAgain:        "Undo the step again",
		UndoAgainHint:    "a new attempt at undoing it, under a new key",
		UndoneByHand:     "Undone by hand",
		UndoneByHandHint: "you undid the step's effect in the system yourself",
		ErrNoteRequired:  "Write what was done and why.",
		ErrNotInReview:   "The process no longer waits for a person.",
		StepOfFmt:        "step «%s»",
		IdleFor:          "Not moved for at least",
		MadeFmt:          "%[1]s: %[2]s in %[3]s, %[4]s",
		OnDenyFmt:        "If denied: %s.",
		OnDenyNothing:    "If denied, there is nothing to undo.",
		UndoOfFmt:        "«%[1]s» is undone by %[2]s",
		ProcessStates: map[string]string{
			"started": "running", "awaiting_approval": "waits for approval", "unknown": "a step's outcome unknown",
			"succeeded": "succeeded", "compensating": "undoing steps", "compensated": "undone",
			"needs_review": "needs a person", "rejected": "rejected",
		},
	}
}
