package main

import (
	"net"
	"os"
)

// sdNotify tells systemd how the run goes (the sd_notify protocol: one
// datagram to $NOTIFY_SOCKET), for a unit of Type=notify: "READY=1" once
// the gateway listens, "STOPPING=1" when it begins to stop. Without
// $NOTIFY_SOCKET (a terminal, Windows) it does nothing.
func sdNotify(state string) {
	sock := os.Getenv("NOTIFY_SOCKET")
	if sock == "" {
		return
	}
	// Go reads a leading "@" as Linux's abstract namespace, as systemd means it.
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return
	}
	defer conn.Close()
	conn.Write([]byte(state))
}
