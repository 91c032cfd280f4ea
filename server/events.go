package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/engine"
)

// Events in: POST /v1/events/{source} takes a source's notices (YooKassa's
// HTTP notifications, Bitrix24's outbound events) without a bearer token:
// a source cannot send one. What protects it is that a notice is believed
// in nothing: its object is read back from the source before anything
// runs. A Bitrix24 notice must also carry the portal's application token,
// and a source may be limited to its own addresses (notices_from).

// eventSource is one source the endpoint takes notices of.
type eventSource struct {
	src adapters.EventSource
	// token is what the source's notices must carry (none for one that
	// sends none: YooKassa).
	token atomic.Pointer[string]
	// signed: the source's notices carry a token (Bitrix24's); with none
	// configured, none is taken.
	signed bool
	from   []*net.IPNet // nil: any address
}

// SetEventTokens gives the endpoint the credential each source's notices
// carry, by source name (Bitrix24: the portal's application token). A
// source that sends one and has none configured takes no notice.
func (s *Server) SetEventTokens(tokens map[string]string) {
	for name, tok := range tokens {
		if es, ok := s.sources[name]; ok {
			es.token.Store(&tok)
		}
	}
}

// eventSources are the targets that send the notices some rule runs on.
func (s *Server) eventSources(targets map[string]adapters.Target) (map[string]*eventSource, map[string]adapters.EventSource) {
	out, plain := map[string]*eventSource{}, map[string]adapters.EventSource{}
	for _, r := range s.events {
		src, ok := targets[r.Source].(adapters.EventSource)
		if !ok {
			continue
		}
		from, _ := s.cfg.Targets[r.Source].NoticeNets() // checked at load
		signed := s.cfg.Targets[r.Source].Kind == config.KindBitrix24
		out[r.Source], plain[r.Source] = &eventSource{src: src, from: from, signed: signed}, src
	}
	return out, plain
}

// noticeAnswer is what a source is answered once its notice is journaled.
type noticeAnswer struct {
	Received bool          `json:"received"`
	Events   []noticeEvent `json:"events"`
}

type noticeEvent struct {
	ID           int64  `json:"id"`
	Run          string `json:"run"`
	OperationKey string `json:"operation_key"`
	State        string `json:"state"`
}

// handleEvent journals a source's notice and answers 200 once it is
// durable; a notice refused (an unknown source or event, a body that is
// none of the source's notices, a wrong token or sender, a body over the
// limit) journals nothing.
func (s *Server) handleEvent(c echo.Context) error {
	name := c.Param("source")
	es, ok := s.sources[name]
	if !ok {
		return codes.Refusef(codes.EventSourceUnknown, "source", "no source of this gateway is named %q; a source is a yookassa or bitrix24 target that a rule of events: runs on", name)
	}
	if es.from != nil && !within(es.from, c.RealIP()) {
		return codes.New(codes.EventSenderRefused, "", "this source's notices are taken only from the addresses its notices_from names")
	}
	req := c.Request()
	if req.ContentLength > maxBody {
		return codes.New(codes.PayloadTooLarge, "", "the body is larger than 64 KiB")
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxBody+1))
	if err != nil {
		return codes.New(codes.EventMalformed, "", "the body could not be read")
	}
	if len(body) > maxBody {
		return codes.New(codes.PayloadTooLarge, "", "the body is larger than 64 KiB")
	}
	n, token, err := es.src.ParseNotice(req.Header.Get(echo.HeaderContentType), body)
	if errors.Is(err, adapters.ErrEventNotSent) {
		return codes.Refusef(codes.EventUnknown, "event", "no rule of this gateway runs on it: %s", err)
	}
	if err != nil {
		return codes.Refusef(codes.EventMalformed, "", "not a notice of %s: %s", name, err)
	}
	if want := es.token.Load(); es.signed && (want == nil || *want == "" || subtle.ConstantTimeCompare([]byte(token), []byte(*want)) != 1) {
		return codes.New(codes.Unauthenticated, "", "the notice does not carry this source's application token")
	}
	evs, err := s.engine.ReceiveNotice(req.Context(), name, n)
	if err != nil {
		return err
	}
	a := noticeAnswer{Received: true, Events: make([]noticeEvent, 0, len(evs))}
	for _, ev := range evs {
		a.Events = append(a.Events, noticeEvent{ID: ev.ID, Run: ev.Run, OperationKey: ev.OpKey, State: string(ev.State)})
	}
	return c.JSON(http.StatusOK, a)
}

// within reports whether the address ip is in one of nets.
func within(nets []*net.IPNet, ip string) bool {
	addr := net.ParseIP(ip)
	for _, n := range nets {
		if addr != nil && n.Contains(addr) {
			return true
		}
	}
	return false
}

// eventOfOperation is the event that started an operation, for its
// answer: nil for an operation an agent asked for.
type eventOfOperation struct {
	Source     string    `json:"source"`
	Event      string    `json:"event"`
	ObjectID   string    `json:"object_id"`
	ID         int64     `json:"id"`
	ReceivedAt time.Time `json:"received_at"`
	Deliveries int       `json:"deliveries"`
}

// startedBy is the event whose rule runs the operation (or process) of
// key that agent runs, nil when no event did.
func (s *Server) startedBy(ctx context.Context, agent, key string) *eventOfOperation {
	if !strings.HasPrefix(agent, engine.EventAgentPrefix) {
		return nil
	}
	evs, err := s.engine.EventsOf(ctx, key)
	if err != nil || len(evs) == 0 {
		return nil
	}
	ev := evs[0]
	return &eventOfOperation{Source: ev.Source, Event: ev.Event, ObjectID: ev.ObjectID, ID: ev.ID, ReceivedAt: ev.ReceivedAt, Deliveries: ev.Deliveries}
}
