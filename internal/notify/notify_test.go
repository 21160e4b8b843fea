package notify

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"
)

func TestPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"93.184.216.34": true, "2606:2800:220:1:248:1893:25c8:1946": true,
		"127.0.0.1": false, "::1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "fe80::1": false, "fc00::1": false, "0.0.0.0": false, "::": false,
		"100.64.0.1": false, "224.0.0.1": false, "255.255.255.255": false, "::ffff:127.0.0.1": false,
		"::ffff:10.0.0.1": false, "64:ff9b::a00:1": false, "198.18.0.1": false,
	} {
		if got := Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestPolicy(t *testing.T) {
	nets, err := ParseNets([]string{"127.0.0.0/8", "10.1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	p := Policy{Hosts: []string{"hooks.example.com", "*.corp.example"}, AllowNets: nets}
	for host, want := range map[string]bool{"hooks.example.com": true, "HOOKS.example.com.": true, "a.corp.example": true,
		"corp.example": false, "evil.example.com": false, "hooks.example.com.evil": false} {
		if got := p.AllowHost(host); got != want {
			t.Errorf("AllowHost(%s) = %v, want %v", host, got, want)
		}
	}
	for addr, want := range map[string]bool{"127.0.0.2": true, "10.1.2.3": true, "10.1.2.4": false, "::1": false, "8.8.8.8": true} {
		if got := p.AllowAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("AllowAddr(%s) = %v, want %v", addr, got, want)
		}
	}
	if _, err := ParseNets([]string{"10.0.0.0/33"}); err == nil {
		t.Error("ParseNets accepted a /33")
	}
	if err := CheckHosts([]string{"*.ok.example", "http://x"}); err == nil {
		t.Error("CheckHosts accepted a URL")
	}
}

// TestClientDialsOnlyAllowedAddresses: the check is on the address dialled,
// so a name that resolves to loopback (as "localhost" does) is refused
// like the address itself, and allowing loopback lets both through.
func TestClientDialsOnlyAllowedAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	port := netip.MustParseAddrPort(srv.Listener.Addr().String()).Port()
	urls := []string{srv.URL, "http://localhost:" + strconv.Itoa(int(port))}
	for _, u := range urls {
		resp, err := NewClient(Policy{}, 5*time.Second).Get(u)
		if err == nil {
			resp.Body.Close()
			t.Errorf("GET %s: reached a loopback server", u)
		} else if !Refused(err) {
			t.Errorf("GET %s: %v, want ErrRefused", u, err)
		}
	}
	allow, _ := ParseNets([]string{"127.0.0.0/8", "::1/128"})
	for _, u := range urls {
		resp, err := NewClient(Policy{AllowNets: allow}, 5*time.Second).Get(u)
		if err != nil {
			t.Errorf("GET %s with loopback allowed: %v", u, err)
			continue
		}
		resp.Body.Close()
	}
}
