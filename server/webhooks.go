package server

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/webhook"
	"github.com/oncegate/oncegate/store"
)

// The webhooks: the configuration's endpoints hear operations' outcomes
// through the journal's outbox (store/webhook.go), sent by a dispatcher
// (server/webhook) while the gateway serves.

// delivery is the body of a webhook: the event, when it happened, and the
// operation's answer as GET /v1/operations/{key} gave it then.
type delivery struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      answer `json:"data"`
}

// outbox is the journal's outbox for the configured endpoints.
func (s *Server) outbox() *store.Outbox {
	o := &store.Outbox{Event: webhookEvent, Render: func(event string, at time.Time, op store.Operation) ([]byte, error) {
		_, _, a := operationAnswer(op, "")
		return json.Marshal(delivery{Type: event, Timestamp: at.UTC().Format(time.RFC3339Nano), Data: a})
	}, RenderProcess: func(event string, at time.Time, p store.Process) ([]byte, error) {
		// The process's envelope without its steps: each step is an
		// operation, heard as one, and reading them is not for the writer.
		_, _, a := processAnswer(p, nil, "")
		a.Steps = nil
		return json.Marshal(delivery{Type: event, Timestamp: at.UTC().Format(time.RFC3339Nano), Data: a})
	}}
	for _, w := range s.cfg.Webhooks {
		o.Endpoints = append(o.Endpoints, store.OutboxEndpoint{Name: w.EndpointName(), Events: w.Events})
	}
	return o
}

// webhookEvent is the endpoint event an audit event of the journal is,
// given the state its operation is in after it; "" for none.
func webhookEvent(audit string, status store.Status) string {
	switch audit {
	case "operation.succeeded":
		return config.EventOperationSucceeded
	case "operation.failed_final":
		return config.EventOperationFailed
	case "operation.unknown":
		return config.EventOperationUnknown
	case "operation.awaiting_approval":
		return config.EventApprovalWaiting
	case "approval.approved", "approval.denied", "approval.expired":
		return config.EventApprovalDecided
	case "process.succeeded":
		return config.EventProcessSucceeded
	case "process.compensated":
		return config.EventProcessCompensated
	case "process.needs_review":
		return config.EventProcessNeedsReview
	case "operation.resolved_by_hand":
		if status == store.StatusSucceeded {
			return config.EventOperationSucceeded
		}
	}
	return ""
}

// SetWebhookSecrets gives the endpoints their signing secrets, one list
// per endpoint in the configuration's order (config.WebhookSecrets); Serve
// then sends the outbox.
func (s *Server) SetWebhookSecrets(secrets [][][]byte) error {
	if len(secrets) != len(s.cfg.Webhooks) {
		return fmt.Errorf("webhooks: %d endpoints, secrets for %d", len(s.cfg.Webhooks), len(secrets))
	}
	eps := make([]webhook.Endpoint, len(secrets))
	for i, w := range s.cfg.Webhooks {
		eps[i] = webhook.Endpoint{Name: w.EndpointName(), URL: w.URL, Secrets: secrets[i], Timeout: time.Duration(w.TimeoutMS) * time.Millisecond}
	}
	s.webhooks = webhook.New(s.store, eps, s.log)
	return nil
}

// adminWebhooks are the endpoints as the admin UI shows them.
func adminWebhooks(ws []config.Webhook) []admin.WebhookEndpoint {
	var out []admin.WebhookEndpoint
	for _, w := range ws {
		out = append(out, admin.WebhookEndpoint{Name: w.EndpointName(), URL: w.URL, Events: w.Events})
	}
	return out
}
