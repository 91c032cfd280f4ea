package config_test

import (
	"testing"

	"github.com/oncegate/oncegate/server/config"
)

// TestYooKassaTimeouts: YooKassa may take up to 30 s before it answers a
// payment (with 500, then it tries to cancel), so the default wait for a
// payment is longer than that, and settle_ms is no shorter.
func TestYooKassaTimeouts(t *testing.T) {
	t.Parallel()
	y := config.Default().Targets.YooKassa
	if y.TimeoutMS < 35000 {
		t.Errorf("targets.yookassa.timeout_ms = %d, want at least 35000", y.TimeoutMS)
	}
	if y.ReadTimeoutMS < 1 || y.ReadTimeoutMS > y.TimeoutMS {
		t.Errorf("targets.yookassa.read_timeout_ms = %d, want 1..timeout_ms", y.ReadTimeoutMS)
	}
	if y.SettleMS < y.TimeoutMS {
		t.Errorf("targets.yookassa.settle_ms = %d, want at least timeout_ms", y.SettleMS)
	}
}
