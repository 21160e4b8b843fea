package embedstack

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// Offsets from the frontend gRPC port of the other Temporal ports when the
// ports are derived rather than picked. They match the server's own
// development configuration (7233 frontend, 7234 history, 7235 matching,
// 7239 worker, 7243 frontend HTTP).
const (
	historyOffset      = 1
	matchingOffset     = 2
	workerOffset       = 6
	frontendHTTPOffset = 10
)

// temporalPorts are the TCP ports of the embedded Temporal services. The
// services find each other through a static host list, so no membership
// ports are needed.
type temporalPorts struct {
	frontend, frontendHTTP, history, matching, worker int
}

func checkPort(name string, port int) error {
	if port < FreePort || port > 65535 {
		return fmt.Errorf("%s %d out of range: use 1-65535, 0 for the default or -1 for a free port", name, port)
	}
	return nil
}

// planTemporalPorts picks free ports when base is FreePort, and otherwise
// derives them from base (0 meaning DefaultTemporalPort) and checks that they
// are free. The server binds them itself after this returns, so a picked
// port can in principle be taken in between; the server then fails to start
// with a clear error rather than misbehaving.
func planTemporalPorts(host string, base int) (temporalPorts, error) {
	var p temporalPorts
	slots := []*int{&p.frontend, &p.frontendHTTP, &p.history, &p.matching, &p.worker}
	names := []string{"temporal frontend", "temporal frontend HTTP", "temporal history", "temporal matching", "temporal worker"}
	if base == 0 {
		base = DefaultTemporalPort
	}
	if base != FreePort {
		if base+frontendHTTPOffset > 65535 {
			return p, fmt.Errorf("temporal port %d too high: the stack also uses %d above it", base, frontendHTTPOffset)
		}
		p = temporalPorts{
			frontend:     base,
			frontendHTTP: base + frontendHTTPOffset,
			history:      base + historyOffset,
			matching:     base + matchingOffset,
			worker:       base + workerOffset,
		}
	}

	// Hold every listener until all ports are known so that picked ports are
	// distinct.
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for i, slot := range slots {
		l, err := listen(names[i], host, *slot)
		if err != nil {
			return p, err
		}
		listeners = append(listeners, l)
		*slot = l.Addr().(*net.TCPAddr).Port
	}
	return p, nil
}

// listen binds host:port (port 0 or FreePort meaning any free port) and
// explains a port conflict in terms the developer can act on.
func listen(name, host string, port int) (net.Listener, error) {
	if port == FreePort {
		port = 0
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("%s port %s is in use (another dev stack or Temporal server?): stop it, or run with --free-ports to listen on free ports (the banner prints them): %w", name, addr, err)
		}
		return nil, fmt.Errorf("listen %s on %s: %w", name, addr, err)
	}
	return l, nil
}
