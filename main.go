// Command oncegate is the gateway between AI agents and the business
// systems they act in: one business intent, one effect.
//
//	oncegate serve          run the gateway
//	oncegate migrate        apply, undo or show the journal's schema
//	oncegate token          create, list or revoke agent tokens
//	oncegate user           add and manage admin UI users
//	oncegate audit verify   check the audit trail's hash chain
//	oncegate backup         a consistent copy of the journal
//	oncegate restore        replace the journal with a checked backup
//	oncegate check          check the configuration and reach each target
//	oncegate intents        list, show or check the intents' definitions
//	oncegate service        install and control oncegate as a service
//	oncegate bench          measure replays and new operations
//	oncegate sim            the 1C, Bitrix24 and YooKassa simulators alone
//
// 'oncegate help' lists every command with its synopsis; 'oncegate
// COMMAND -h' prints a command's flags, which may stand before or after
// its arguments. The commands are listed here, each in its own cmd_*.go;
// commands.go is the framework that finds and runs them, and what several
// commands need lives in a file named for what it holds (journal.go,
// catalog.go, probe.go, firstrun.go, service.go, logging.go, …).
//
// docs/operations.md is the commands' manual; docs/development.md the
// layout of the code and its tests.
package main

import (
	"fmt"
	"os"
	// The IANA zone database inside the binary: a Windows server beside
	// 1C has none that Go can read, and a 1C base's or a portal's
	// time_zone (Europe/Moscow) must load there as on Linux.
	_ "time/tzdata"

	"github.com/oncegate/oncegate/store"
)

func main() {
	if err := (invocation{os.Stdin, os.Stdout, os.Stderr, os.Getenv}).run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "oncegate:", err)
		if store.IsBusy(err) {
			fmt.Fprintln(os.Stderr, "oncegate: the journal was busy (another oncegate process held it); nothing was changed, try again")
		}
		os.Exit(1)
	}
}

// commands is every command, in the order the usage lists them.
var commands = []command{
	serveCommand,
	migrateCommand,
	tokenCreateCommand,
	tokenListCommand,
	tokenRevokeCommand,
	userAddCommand,
	userPasswdCommand,
	userDisableCommand,
	userEnableCommand,
	userListCommand,
	userContactCommand,
	auditVerifyCommand,
	backupCommand,
	restoreCommand,
	checkCommand,
	intentsListCommand,
	intentsShowCommand,
	intentsCheckCommand,
	serviceCommand,
	serviceInstallCommand,
	serviceUninstallCommand,
	serviceStartCommand,
	serviceStopCommand,
	serviceStatusCommand,
	benchCommand,
	simCommand,
	versionCommand,
}
