package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/server"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/store/storetest"
)

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// their paths and a pool trusting the certificate.
func selfSigned(t *testing.T) (string, string, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "oncegate test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return certPath, keyPath, pool
}

// With a certificate configured the gateway speaks HTTPS only and the
// admin session cookie is Secure.
func TestTLS(t *testing.T) {
	t.Parallel()
	certPath, keyPath, pool := selfSigned(t)
	cfg := testConfig()
	cfg.TLS = config.TLSConfig{CertFile: certPath, KeyFile: keyPath}
	ctx := context.Background()
	st := storetest.Open(t)
	targets := simulated(t, cfg).Targets
	srv := server.New(cfg, st, targets, mustCatalog(t, cfg, targets), slog.New(slog.NewTextHandler(io.Discard, nil)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(serveCtx, ln) }()
	defer func() { stop(); <-done }()

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	base := "https://" + ln.Addr().String()
	var resp *http.Response
	for range 50 {
		if resp, err = client.Get(base + "/healthz"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /healthz over TLS: %v %v", resp, err)
	}
	resp.Body.Close()
	if resp, err := http.Get("http://" + ln.Addr().String() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain HTTP answered 200")
		}
	}

	// The sign-in form sets its form-token cookie: Secure under TLS.
	noRedirect := *client
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	page, err := noRedirect.Get(base + "/admin/login")
	if err != nil {
		t.Fatal(err)
	}
	page.Body.Close()
	if len(page.Cookies()) == 0 {
		t.Fatal("the sign-in form set no cookie")
	}
	if got := page.Header.Get("Strict-Transport-Security"); !strings.HasPrefix(got, "max-age=") {
		t.Fatalf("no HSTS under TLS: %q", got)
	}
	for _, c := range page.Cookies() {
		if !c.Secure || !c.HttpOnly {
			t.Fatalf("cookie %s under TLS: Secure %v HttpOnly %v", c.Name, c.Secure, c.HttpOnly)
		}
	}
}
