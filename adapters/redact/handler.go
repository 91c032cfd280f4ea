package redact

import (
	"context"
	"fmt"
	"log/slog"
)

// Handler is h with every record redacted by r: the message and string
// values as the gateway's own text (Own), errors as text from outside
// (Foreign), for an error may quote a target. Other values are left as
// they are unless their printed form holds a secret.
func Handler(h slog.Handler, r *Redactor) slog.Handler {
	return handler{inner: h, r: r}
}

type handler struct {
	inner slog.Handler
	r     *Redactor
}

// Enabled implements slog.Handler.
func (h handler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

// Handle implements slog.Handler.
func (h handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.Own(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

// WithAttrs implements slog.Handler.
func (h handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return handler{inner: h.inner.WithAttrs(red), r: h.r}
}

// WithGroup implements slog.Handler.
func (h handler) WithGroup(name string) slog.Handler {
	return handler{inner: h.inner.WithGroup(name), r: h.r}
}

// attr is a redacted.
func (h handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.Own(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]slog.Attr, len(g))
		for i, m := range g {
			red[i] = h.attr(m)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(red...)}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.r.Foreign(x.Error()))
		case []byte:
			return slog.String(a.Key, h.r.Foreign(string(x)))
		default:
			s := fmt.Sprintf("%+v", x)
			if red := h.r.Own(s); red != s {
				return slog.String(a.Key, red)
			}
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
