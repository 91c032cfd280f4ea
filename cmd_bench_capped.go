package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/oncegate/oncegate/adapters/sim"
)

// startCappedGateways starts instances gateways as processes of this
// binary (oncegate serve, as an operator runs it, logs included), each in
// a control group of its own capped at quota CPUs, their targets the
// simulators at simURL and their journal the SQLite file in dir or the
// PostgreSQL journal at journalURL. It returns them with a token of the
// journal for the load. The gateways' CPU is read from their processes;
// with profile, each writes its CPU profile to profile.gateway-N.
func startCappedGateways(ctx context.Context, dir, simURL, journalURL string, instances int, quota float64, profile string) (*benchGateways, string, error) {
	gw := &benchGateways{}
	exe, err := os.Executable()
	if err != nil {
		return gw, "", err
	}
	cfg := filepath.Join(dir, "bench.yaml")
	body := fmt.Sprintf(`rate_limit: { per_second: 1000000000, burst: 1000000000 }
targets:
  onec: { base_url: "%[1]s/onec" }
  bitrix24: { webhook_url_env: BENCH_BITRIX24_WEBHOOK }
  yookassa: { base_url: "%[1]s/yookassa/v3", shop_id: "bench-shop", secret_key_env: BENCH_YOOKASSA_SECRET }
`, simURL)
	env := append(os.Environ(),
		"BENCH_BITRIX24_WEBHOOK="+simURL+"/bitrix24"+sim.Bitrix24WebhookPath(),
		"BENCH_YOOKASSA_SECRET="+sim.YooKassaSecret())
	if journalURL != "" {
		body += "journal: { url_env: BENCH_JOURNAL_URL }\n"
		env = append(env, "BENCH_JOURNAL_URL="+journalURL)
	}
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		return gw, "", err
	}
	data := func(i int) string { return filepath.Join(dir, "gateway-"+strconv.Itoa(i)) }
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Env = env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("oncegate %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
		}
		return string(out), nil
	}
	if _, err := run("migrate", "up", "--config", cfg, "--data", data(0)); err != nil {
		return gw, "", err
	}
	out, err := run("token", "create", "--config", cfg, "--data", data(0), "--name", "bench-agent", "--scopes", "read,draft,write,post,pay")
	if err != nil {
		return gw, "", err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	token := strings.TrimSpace(lines[len(lines)-1])

	var pids []int
	for i := range instances {
		addr, err := freeLoopback()
		if err != nil {
			return gw, "", err
		}
		args := []string{"serve", "--config", cfg, "--data", data(i), "--listen", addr}
		if profile != "" {
			args = append(args, "--cpuprofile", fmt.Sprintf("%s.gateway-%d", profile, i))
		}
		cmd := exec.Command(exe, args...)
		cmd.Env = env // stdout and stderr: the null device
		if err := cmd.Start(); err != nil {
			return gw, "", err
		}
		release, err := capCPU(fmt.Sprintf("oncegate-bench-%d-%d", os.Getpid(), i), cmd.Process.Pid, quota)
		gw.stops = append(gw.stops, func() {
			cmd.Process.Signal(os.Interrupt) // serve stops as asked, writing its profile
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				<-done
			}
			release()
		})
		if err != nil {
			return gw, "", fmt.Errorf("--cpu-quota: %w", err)
		}
		url := "http://" + addr
		if err := waitReady(url, 30*time.Second); err != nil {
			return gw, "", err
		}
		gw.urls = append(gw.urls, url)
		pids = append(pids, cmd.Process.Pid)
	}
	gw.cpu = func() time.Duration {
		var sum time.Duration
		for _, pid := range pids {
			sum += processCPUOf(pid)
		}
		return sum
	}
	return gw, token, nil
}

// freeLoopback is a loopback address no one listens on now.
func freeLoopback() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitReady waits until the gateway at url says it is ready.
func waitReady(url string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("a gateway did not become ready at " + url)
}
