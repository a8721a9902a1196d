package lab

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// check is one readiness probe, run from the scanner namespace.
type check struct {
	what string
	node string // whose log to show on failure
	run  func() error
}

func (l *Lab) checks() []check {
	var cs []check
	dns := netip.AddrPortFrom(l.Spec.DNS, 53)
	for _, h := range l.Spec.Hosts {
		if h.DNSName != "" {
			name := h.DNSName
			cs = append(cs, check{"dnsmasq A " + name, NodeDNS, func() error {
				return dnsAnswers(dns, name, 1)
			}})
		}
		ip := h.IP
		if h.MDNSName != "" || h.DNSSD != nil {
			cs = append(cs, check{"avahi reverse PTR of " + ip.String(), h.Name, func() error {
				return dnsAnswers(netip.AddrPortFrom(ip, 5353), reverseName(ip), 12)
			}})
		}
		if s := h.DNSSD; s != nil {
			typ := s.Type + ".local"
			cs = append(cs, check{"avahi DNS-SD " + typ + " on " + ip.String(), h.Name, func() error {
				return dnsAnswers(netip.AddrPortFrom(ip, 5353), typ, 12)
			}})
		}
		if nb := h.NetBIOS; nb != "" {
			cs = append(cs, check{"nmbd " + nb + " on " + ip.String(), h.Name, func() error {
				return nbstatHas(ip, nb)
			}})
		}
		if up := h.UPnP; up != "" {
			cs = append(cs, check{"minidlna " + up + " on " + ip.String(), h.Name, func() error {
				return httpHas(netip.AddrPortFrom(ip, UPnPPort), "/rootDesc.xml", "<friendlyName>"+up+"</friendlyName>")
			}})
		}
		for _, p := range h.TCPPorts {
			ap := netip.AddrPortFrom(ip, uint16(p))
			cs = append(cs, check{"tcp " + ap.String(), h.Name, func() error {
				c, err := net.DialTimeout("tcp", ap.String(), 500*time.Millisecond)
				if err != nil {
					return err
				}
				return c.Close()
			}})
		}
	}
	return cs
}

// waitReady polls every responder from the scanner namespace until all
// answer or the timeout passes.
func (l *Lab) waitReady(timeout time.Duration) error {
	pending := l.checks()
	last := map[string]error{}
	deadline := time.Now().Add(timeout)
	for len(pending) > 0 {
		if dead := l.exited(); len(dead) > 0 {
			return fmt.Errorf("lab %s: responder died: %s", l.Name, strings.Join(dead, "; "))
		}
		var still []check
		err := l.Do(NodeScanner, func() error {
			for _, c := range pending {
				if err := c.run(); err != nil {
					last[c.what] = err
					still = append(still, c)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		pending = still
		if len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			var msgs []string
			for _, c := range pending {
				msgs = append(msgs, fmt.Sprintf("%s: %v (log: %s)", c.what, last[c.what], l.logsOf(c.node)))
			}
			return fmt.Errorf("lab %s: responders not ready after %v: %s", l.Name, timeout, strings.Join(msgs, "; "))
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

func (l *Lab) logsOf(node string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, p := range l.procs {
		if strings.HasPrefix(p.name, node+"/") {
			out = append(out, p.name+": "+logTail(p.log))
		}
	}
	return strings.Join(out, " | ")
}

func reverseName(a netip.Addr) string {
	b := a.As4()
	return fmt.Sprintf("%d.%d.%d.%d.in-addr.arpa", b[3], b[2], b[1], b[0])
}

// dnsAnswers sends one DNS query (RD=0) over UDP and wants a reply with the
// same ID, rcode 0 and at least one answer.
func dnsAnswers(server netip.AddrPort, name string, qtype uint16) error {
	var id [2]byte
	_, _ = rand.Read(id[:])
	q := []byte{id[0], id[1], 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}
	for _, label := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		q = append(q, byte(len(label)))
		q = append(q, label...)
	}
	q = append(q, 0, byte(qtype>>8), byte(qtype), 0, 1)
	resp, err := udpExchange(server, q)
	if err != nil {
		return err
	}
	if len(resp) < 12 || resp[0] != id[0] || resp[1] != id[1] {
		return errors.New("reply with another id")
	}
	if rcode := resp[3] & 0x0f; rcode != 0 {
		return fmt.Errorf("rcode %d", rcode)
	}
	if binary.BigEndian.Uint16(resp[6:8]) == 0 {
		return errors.New("no answer")
	}
	return nil
}

// nbstatHas sends a NetBIOS node status query and wants name in the reply.
func nbstatHas(ip netip.Addr, name string) error {
	q := []byte{0x4a, 0x4c, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x20}
	q = append(q, "CK"+strings.Repeat("A", 30)...)
	q = append(q, 0, 0, 0x21, 0, 1)
	resp, err := udpExchange(netip.AddrPortFrom(ip, 137), q)
	if err != nil {
		return err
	}
	padded := []byte(name + strings.Repeat(" ", 15-len(name)))
	if !bytes.Contains(resp, padded) {
		return fmt.Errorf("reply without %q", name)
	}
	return nil
}

func udpExchange(server netip.AddrPort, q []byte) ([]byte, error) {
	c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(server))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(700 * time.Millisecond)); err != nil {
		return nil, err
	}
	if _, err := c.Write(q); err != nil {
		return nil, err
	}
	buf := make([]byte, 1500)
	n, err := c.Read(buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// httpHas fetches path over HTTP/1.0 and wants want in the body.
func httpHas(ap netip.AddrPort, path, want string) error {
	c, err := net.DialTimeout("tcp", ap.String(), 700*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return err
	}
	req := "GET " + path + " HTTP/1.0\r\nHost: " + ap.String() + "\r\nConnection: close\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		return err
	}
	body, err := io.ReadAll(io.LimitReader(c, 1<<20))
	if err != nil && len(body) == 0 {
		return err
	}
	if !bytes.Contains(body, []byte(want)) {
		return fmt.Errorf("%s has no %s (%s bytes)", path, want, strconv.Itoa(len(body)))
	}
	return nil
}
