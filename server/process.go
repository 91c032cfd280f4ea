package server

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/engine"
	"github.com/oncegate/oncegate/store"
)

// stepAnswer is one step of a process in its answer.
type stepAnswer struct {
	Name           string              `json:"name"`
	Intent         string              `json:"intent"`
	OperationKey   string              `json:"operation_key"`
	State          string              `json:"state"`
	TargetSystem   nullable            `json:"target_system"`
	TargetObjectID *string             `json:"target_object_id"`
	Result         json.RawMessage     `json:"result"`
	Errors         []ErrorItem         `json:"errors,omitempty"`
	Compensation   *compensationAnswer `json:"compensation"`
}

// compensationAnswer is the undoing of a step.
type compensationAnswer struct {
	Intent         string      `json:"intent"`
	OperationKey   string      `json:"operation_key"`
	State          string      `json:"state"`
	TargetObjectID *string     `json:"target_object_id"`
	Errors         []ErrorItem `json:"errors,omitempty"`
}

// Retry-After of a process that is not final, in seconds.
const retryProcess = 2

// processAnswer is the answer about a process: the envelope of an
// operation, with its steps; its HTTP status and Retry-After.
func processAnswer(p store.Process, steps []engine.StepView, requestID string) (int, int, answer) {
	a := answer{OperationKey: p.Key, RequestID: requestID, Operation: p.Intent, State: string(p.State),
		Result: json.RawMessage("null"), Fingerprint: nullable(p.Fingerprint), Steps: []stepAnswer{}}
	if a.RequestID == "" {
		a.RequestID = p.RequestID
	}
	if a.RequestID == "" {
		a.RequestID = p.Key
	}
	for _, v := range steps {
		a.Steps = append(a.Steps, stepOf(v))
	}
	item := func(code, msg string) ErrorItem {
		return ErrorItem{Code: code, Message: msg, Retryable: codes.Retryable(code)}
	}
	failed := func() ErrorItem {
		return item(p.ErrorCode, "step "+p.Step+" failed for good: "+p.ErrorMessage)
	}
	switch p.State {
	case store.ProcessSucceeded:
		return http.StatusOK, 0, a
	case store.ProcessRejected:
		a.Errors = []ErrorItem{failed()}
		return http.StatusUnprocessableEntity, 0, a
	case store.ProcessCompensated:
		f := failed()
		f.Message = "a step failed for good: " + p.ErrorMessage
		a.Errors = []ErrorItem{f, item(codes.ProcessCompensated, "the steps completed before it were undone as declared (see steps[].compensation)")}
		return http.StatusUnprocessableEntity, 0, a
	case store.ProcessAwaitingApproval:
		a.Errors = []ErrorItem{item(codes.ApprovalRequired, "step "+p.Step+" waits for a person's approval; read the process again to learn the decision")}
		return http.StatusAccepted, retryApproval, a
	case store.ProcessUnknown:
		a.Errors = []ErrorItem{item(codes.OutcomeUnknown, "the outcome of step "+p.Step+" is being reconciled by key; nothing is sent again until it is known")}
		return http.StatusAccepted, retryUnknown, a
	case store.ProcessNeedsReview:
		a.Errors = []ErrorItem{failed(), item(codes.ProcessNeedsReview, "undoing step "+p.Step+" needs a person; the process waits for them in the admin UI")}
		return http.StatusAccepted, retryApproval, a
	case store.ProcessCompensating:
		a.Errors = []ErrorItem{failed()}
	}
	return http.StatusAccepted, retryProcess, a
}

// stepOf is a step's entry in a process's answer.
func stepOf(v engine.StepView) stepAnswer {
	sa := stepAnswer{Name: v.Name, Intent: v.Intent, OperationKey: v.Key, State: "pending", Result: json.RawMessage("null")}
	switch {
	case v.Op != nil:
		_, _, oa := operationAnswer(*v.Op, "")
		sa.State, sa.TargetSystem, sa.TargetObjectID, sa.Result, sa.Errors = oa.State, oa.TargetSystem, oa.TargetObjectID, oa.Result, oa.Errors
	case v.Refusal != nil:
		sa.State = "rejected"
		sa.Errors = []ErrorItem{{Code: v.Refusal.Code, Field: v.Refusal.Field, Message: v.Refusal.Message}}
	}
	if c := v.Compensation; c != nil {
		ca := &compensationAnswer{Intent: c.Intent, OperationKey: c.Key, State: "pending"}
		switch {
		case c.Op != nil:
			_, _, oa := operationAnswer(*c.Op, "")
			ca.State, ca.TargetObjectID, ca.Errors = oa.State, oa.TargetObjectID, oa.Errors
		case c.Refusal != nil:
			ca.State = "rejected"
			ca.Errors = []ErrorItem{{Code: c.Refusal.Code, Field: c.Refusal.Field, Message: c.Refusal.Message}}
		}
		sa.Compensation = ca
	}
	return sa
}

// writeProcess writes the answer about a process.
func (s *Server) writeProcess(c echo.Context, p store.Process, steps []engine.StepView, requestID string, replayed bool) error {
	status, retry, a := processAnswer(p, steps, requestID)
	a.Replayed = replayed
	h := c.Response().Header()
	if replayed {
		h.Set("Idempotent-Replayed", "true")
	}
	if retry > 0 {
		h.Set("Retry-After", itoa(retry))
	}
	return s.writeAnswer(c, status, a)
}
