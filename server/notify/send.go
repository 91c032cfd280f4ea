package notify

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/mail"
	"net/smtp"
	"strconv"
	"strings"
	"time"

	"github.com/oncegate/oncegate/adapters/redact"
	"github.com/oncegate/oncegate/server/config"
)

// Secrets are the channels' secrets as the redaction masks them: the
// mail server's password (alone and with its user) and the bot's token.
func Secrets(s config.NotifySecrets) []redact.Secret {
	var out []redact.Secret
	if s.SMTP != nil && s.SMTP.Password != "" {
		out = append(out, redact.Basic(s.SMTP.User, s.SMTP.Password))
	}
	if s.BotToken != "" {
		out = append(out, redact.Value(s.BotToken))
	}
	return out
}

// message is what one send says: a subject (for e-mail) and the text.
type message struct {
	Subject string
	Text    string
}

// sendError is a failed send: what to show (safe: no secret, no URL
// with the token) and, when the receiver asked, when to try again.
type sendError struct {
	msg   string
	after time.Duration
}

func (e *sendError) Error() string { return e.msg }

// emailSender sends notices through the configured mail server.
type emailSender struct {
	server config.SMTP
	from   *mail.Address
	// tls is the client's TLS configuration: nil for the system's roots
	// and the server's host name; tests give theirs.
	tls     *tls.Config
	timeout time.Duration
}

// send mails m to to, over STARTTLS when the server offers it (TLS from
// the first byte for smtps://), signing in when the URL names a user.
// net/smtp's PLAIN refuses to send the password over a connection that
// is neither encrypted nor to this machine.
func (e *emailSender) send(ctx context.Context, to string, m message) error {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	cfg := e.tls
	if cfg == nil {
		cfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = e.server.Host
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", e.server.Addr())
	if err != nil {
		return &sendError{msg: "the mail server could not be reached"}
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if e.server.ImplicitTLS {
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return &sendError{msg: "TLS with the mail server failed: " + err.Error()}
		}
		conn = tc
	}
	c, err := smtp.NewClient(conn, e.server.Host)
	if err != nil {
		return smtpError("greeting", err)
	}
	defer c.Close()
	if err := c.Hello("oncegate"); err != nil {
		return smtpError("EHLO", err)
	}
	if ok, _ := c.Extension("STARTTLS"); ok && !e.server.ImplicitTLS {
		if err := c.StartTLS(cfg); err != nil {
			return &sendError{msg: "STARTTLS with the mail server failed: " + err.Error()}
		}
	}
	if e.server.User != "" {
		if err := c.Auth(smtp.PlainAuth("", e.server.User, e.server.Password, e.server.Host)); err != nil {
			return smtpError("sign-in", err)
		}
	}
	if err := c.Mail(e.from.Address); err != nil {
		return smtpError("MAIL FROM", err)
	}
	if err := c.Rcpt(to); err != nil {
		return smtpError("RCPT TO", err)
	}
	w, err := c.Data()
	if err != nil {
		return smtpError("DATA", err)
	}
	if _, err := w.Write(e.compose(to, m)); err != nil {
		return smtpError("DATA", err)
	}
	if err := w.Close(); err != nil {
		return smtpError("the message", err)
	}
	c.Quit()
	return nil
}

// smtpError says at which step the server refused, with its reply (never
// the password: PLAIN's credentials are not in any reply).
func smtpError(step string, err error) error {
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return &sendError{msg: fmt.Sprintf("the mail server refused %s: %s", step, msg)}
}

// compose is the message: plain UTF-8 text, quoted-printable, marked as
// sent by a machine so no one's autoresponder answers it.
func (e *emailSender) compose(to string, m message) []byte {
	var b bytes.Buffer
	id := make([]byte, 12)
	rand.Read(id)
	domain := e.from.Address[strings.LastIndex(e.from.Address, "@")+1:]
	h := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	h("From", e.from.String())
	h("To", (&mail.Address{Address: to}).String())
	h("Subject", mime.QEncoding.Encode("utf-8", m.Subject))
	h("Date", time.Now().Format(time.RFC1123Z))
	h("Message-ID", "<"+hex.EncodeToString(id)+"@"+domain+">")
	h("MIME-Version", "1.0")
	h("Content-Type", "text/plain; charset=utf-8")
	h("Content-Transfer-Encoding", "quoted-printable")
	h("Auto-Submitted", "auto-generated")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	qp.Write([]byte(strings.ReplaceAll(m.Text, "\n", "\r\n")))
	qp.Close()
	return b.Bytes()
}

// telegramMax is the longest text the Bot API takes, in characters;
// a longer one is cut, not refused over and over.
const telegramMax = 4096

// telegramSender sends notices through the Bot API.
type telegramSender struct {
	base   string // the Bot API's address, without the token
	token  string
	client *http.Client
}

// send posts m's text to chat.
func (t *telegramSender) send(ctx context.Context, chat string, m message) error {
	text := m.Text
	if r := []rune(text); len(r) > telegramMax {
		text = string(r[:telegramMax-1]) + "…"
	}
	return t.call(ctx, t.client, "sendMessage", map[string]any{"chat_id": chat, "text": text, "disable_web_page_preview": true}, nil)
}

// telegramAnswerMax bounds an answer read: getUpdates' hundred updates
// are up to 4 MiB.
const telegramAnswerMax = 5 << 20

// call posts args as JSON to the Bot API's method with client, and reads
// its result into out (nil: not read). The request's URL holds the
// token, so no error of the HTTP client is shown as it is.
func (t *telegramSender) call(ctx context.Context, client *http.Client, method string, args, out any) error {
	body, _ := json.Marshal(args)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.base+"/bot"+t.token+"/"+method, bytes.NewReader(body))
	if err != nil {
		return &sendError{msg: "the Bot API's address is not usable"}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return &sendError{msg: "the Bot API did not answer in time"}
		}
		return &sendError{msg: "the Bot API could not be reached"}
	}
	defer resp.Body.Close()
	var ans struct {
		OK          bool            `json:"ok"`
		Result      json.RawMessage `json:"result"`
		Description string          `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, telegramAnswerMax))
	json.Unmarshal(raw, &ans)
	if resp.StatusCode == http.StatusOK && ans.OK {
		if out != nil && json.Unmarshal(ans.Result, out) != nil {
			return &sendError{msg: "the Bot API's answer to " + method + " could not be read"}
		}
		return nil
	}
	e := &sendError{msg: "the Bot API answered HTTP " + strconv.Itoa(resp.StatusCode)}
	if d := ans.Description; d != "" {
		if len(d) > 200 {
			d = d[:200]
		}
		e.msg += ": " + d
	}
	if s := ans.Parameters.RetryAfter; s > 0 {
		e.after = time.Duration(min(s, 3600)) * time.Second
	}
	return e
}
