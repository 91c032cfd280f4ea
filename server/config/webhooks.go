package config

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// The events an endpoint may ask for.
const (
	EventOperationSucceeded = "operation.succeeded"
	EventOperationFailed    = "operation.failed"
	EventOperationUnknown   = "operation.unknown"
	EventApprovalWaiting    = "approval.waiting"
	EventApprovalDecided    = "approval.decided"
	// A process's ends, and a process waiting for a person.
	EventProcessSucceeded   = "process.succeeded"
	EventProcessCompensated = "process.compensated"
	EventProcessNeedsReview = "process.needs_review"
)

// WebhookEvents lists the events an endpoint may ask for.
var WebhookEvents = []string{EventOperationSucceeded, EventOperationFailed, EventOperationUnknown, EventApprovalWaiting, EventApprovalDecided,
	EventProcessSucceeded, EventProcessCompensated, EventProcessNeedsReview}

// Webhook is one endpoint that hears operations' outcomes (webhooks:).
type Webhook struct {
	// Name names the endpoint in the journal and the admin UI; "" for
	// the URL's host and path.
	Name string `yaml:"name"`
	URL  string `yaml:"url"`
	// SecretEnv names the variable holding the endpoint's signing secret
	// (whsec_ and base64, Standard Webhooks); PreviousSecretEnv, during a
	// rotation, the one it replaces: deliveries are signed with both.
	SecretEnv         string   `yaml:"secret_env"`
	PreviousSecretEnv string   `yaml:"previous_secret_env"`
	Events            []string `yaml:"events"`
	// AllowHTTP lets a plain-HTTP URL outside loopback through (a
	// receiver on the firm's own network).
	AllowHTTP bool `yaml:"allow_http"`
	// TimeoutMS bounds one delivery's request (default 10 s).
	TimeoutMS int `yaml:"timeout_ms"`
}

// EndpointName is the endpoint's name: Name, or the URL's host and path
// (never its query or user, which may carry a credential).
func (w Webhook) EndpointName() string {
	if w.Name != "" {
		return w.Name
	}
	u, err := url.Parse(w.URL)
	if err != nil {
		return ""
	}
	return u.Host + strings.TrimSuffix(u.Path, "/")
}

// validateWebhooks checks each endpoint: a URL that is https (or http on
// loopback, or allowed), events it knows, a secret variable named, names
// that differ.
func (c Config) validateWebhooks(bad func(key, format string, args ...any)) {
	names := map[string]bool{}
	for i, w := range c.Webhooks {
		key := fmt.Sprintf("webhooks[%d]", i)
		u, err := url.Parse(w.URL)
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
			bad(key+".url", "must be an https:// URL")
		case u.User != nil:
			bad(key+".url", "must not carry a user or password; the deliveries are signed with secret_env's secret")
		case u.Scheme == "http" && !w.AllowHTTP && !loopback(u.Hostname()):
			bad(key+".url", "is plain HTTP outside this machine: use https://, or set allow_http: true for a receiver on the firm's own network")
		}
		if len(w.Events) == 0 {
			bad(key+".events", "name the events to send: %s", strings.Join(WebhookEvents, ", "))
		}
		for _, e := range w.Events {
			if !slices.Contains(WebhookEvents, e) {
				bad(key+".events", "%q is no event; the events are %s", e, strings.Join(WebhookEvents, ", "))
			}
		}
		if w.SecretEnv == "" {
			bad(key+".secret_env", "name the environment variable holding the endpoint's whsec_ secret")
		}
		checkEnv(bad, key+".secret_env", w.SecretEnv)
		checkEnv(bad, key+".previous_secret_env", w.PreviousSecretEnv)
		if w.TimeoutMS < 0 || w.TimeoutMS > 60000 {
			bad(key+".timeout_ms", "%d must be between 1 and 60000", w.TimeoutMS)
		}
		if n := w.EndpointName(); n != "" {
			if names[n] {
				bad(key+".name", "%q names two endpoints; give each its own name", n)
			}
			names[n] = true
		}
	}
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// WebhookSecrets reads each endpoint's signing secrets from env, the
// current first: a missing one, or one not whsec_ and base64, is an error
// naming its setting (never the value).
func (c Config) WebhookSecrets(env func(string) string) ([][][]byte, error) {
	out := make([][][]byte, len(c.Webhooks))
	for i, w := range c.Webhooks {
		for j, name := range []string{w.SecretEnv, w.PreviousSecretEnv} {
			if name == "" {
				continue
			}
			setting := fmt.Sprintf("webhooks[%d].%s", i, []string{"secret_env", "previous_secret_env"}[j])
			v := env(name)
			if v == "" {
				return nil, fmt.Errorf("%s: the variable %s is empty or unset", setting, name)
			}
			key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(v, "whsec_"))
			if !strings.HasPrefix(v, "whsec_") || err != nil || len(key) < 16 {
				return nil, fmt.Errorf("%s: the variable %s does not hold a secret of the form whsec_ followed by base64 of at least 16 bytes", setting, name)
			}
			out[i] = append(out[i], key)
		}
	}
	return out, nil
}
