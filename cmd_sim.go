package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/oncegate/oncegate/adapters/sim"
)

var simCommand = command{
	name:    "sim",
	args:    "[--listen ADDR]",
	summary: "run the 1C, Bitrix24 and YooKassa simulators alone",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		listen := fs.String("listen", "127.0.0.1:9001", "`ADDR` to listen on")
		return func(inv invocation, args []string) error {
			if len(args) != 0 {
				return badUsage("sim", "takes no arguments")
			}
			return runSim(*listen, inv.stderr)
		}
	},
}

func runSim(listen string, stderr io.Writer) error {
	_, hs, url, err := sim.Start(listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "simulators at %s/onec, %s/bitrix24, %s/yookassa; control API at %s/_sim/\n", url, url, url, url)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return hs.Shutdown(shutdownCtx)
}
