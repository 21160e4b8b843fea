package notify

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// ErrRefused is a host or an address the policy does not let the worker
// notify.
var ErrRefused = errors.New("the worker may not notify this host")

// Policy says which hosts a notification may go to. The zero Policy
// allows any host name whose addresses are public.
type Policy struct {
	// Hosts are the host names a notification may name: "hooks.example.com"
	// matches itself, "*.example.com" its subdomains (not itself). Empty
	// means any host.
	Hosts []string
	// AllowNets are the networks among the refused ones (loopback,
	// link-local, private, shared, unspecified, multicast and other
	// special-purpose addresses) that a notification may still be sent
	// to, such as 127.0.0.0/8 for a receiver on the same machine.
	AllowNets []netip.Prefix
}

// ParseNets parses CIDRs ("10.1.0.0/16", "::1/128") or single addresses.
func ParseNets(nets []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, n := range nets {
		n = strings.TrimSpace(n)
		if p, err := netip.ParsePrefix(n); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(n)
		if err != nil {
			return nil, fmt.Errorf("notification network %q is not a CIDR such as 10.1.0.0/16 or an address", n)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// CheckHosts checks host patterns: names, or "*." and a name.
func CheckHosts(hosts []string) error {
	for _, h := range hosts {
		name := strings.TrimPrefix(h, "*.")
		if name == "" || strings.ContainsAny(name, "*/:@ ") {
			return fmt.Errorf("notification host %q is not a host name or *.domain", h)
		}
	}
	return nil
}

// AllowHost reports whether host (a URL's host name, without port) may be
// notified.
func (p Policy) AllowHost(host string) bool {
	if len(p.Hosts) == 0 {
		return true
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, h := range p.Hosts {
		h = strings.ToLower(h)
		if suffix, ok := strings.CutPrefix(h, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if host == h {
			return true
		}
	}
	return false
}

// special are the address ranges that are not public beyond what
// netip.Addr's own predicates say: shared address space (carrier NAT),
// the IETF protocol assignments, benchmarking, the "this network" block,
// the reserved block (broadcast included), NAT64 and the documentation
// ranges.
var special = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2001:db8::/32"),
}

// Public reports whether addr is an ordinary public unicast address.
func Public(addr netip.Addr) bool {
	addr = addr.Unmap()
	if !addr.IsValid() || addr.IsLoopback() || addr.IsPrivate() || addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast() ||
		addr.IsInterfaceLocalMulticast() || addr.IsMulticast() || addr.IsUnspecified() {
		return false
	}
	for _, p := range special {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// AllowAddr reports whether the worker may connect to addr.
func (p Policy) AllowAddr(addr netip.Addr) bool {
	addr = addr.Unmap()
	if Public(addr) {
		return true
	}
	for _, n := range p.AllowNets {
		if n.Contains(addr) {
			return true
		}
	}
	return false
}

// control is a net.Dialer's Control: it runs on the address being dialled,
// after name resolution, for every address tried.
func (p Policy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !p.AllowAddr(ap.Addr()) {
		return ErrRefused
	}
	return nil
}

// NewClient is an HTTP client that follows no redirect (a redirect could
// move the POST to another host), uses no proxy (the proxy's address
// would be the one checked) and connects only to addresses the policy
// allows, checked on each address dialled. timeout bounds each request.
func NewClient(p Policy, timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: p.control}
	t := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Timeout:       timeout,
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Refused reports whether err is the policy refusing a host or address.
func Refused(err error) bool { return errors.Is(err, ErrRefused) }
