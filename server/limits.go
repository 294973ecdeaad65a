package server

import (
	"errors"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"
)

// This file holds what keeps one client from holding the server's
// connections (timeouts, header size) and what keeps a web page on
// another site from using a server on the same machine (Host, Origin and
// Content-Type checks).

// httpServer is the http.Server that serves h with the timeouts and
// header limit of opts: a request must arrive within ReadTimeout (its
// headers within ReadHeaderTimeout), an idle keep-alive connection is
// closed after IdleTimeout, and a response write may block for
// WriteTimeout. The API's handlers extend the write deadline each time
// they write (see statusWriter), so streams and long waits last as long
// as their run.
func httpServer(opts Options, h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(10*time.Second, opts.ReadTimeout),
		ReadTimeout:       opts.ReadTimeout,
		WriteTimeout:      opts.WriteTimeout,
		IdleTimeout:       opts.IdleTimeout,
		MaxHeaderBytes:    opts.MaxHeaderBytes,
	}
}

// limitDefaults fills the HTTP limits left zero.
func limitDefaults(opts *Options) {
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = 30 * time.Second
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = time.Minute
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 2 * time.Minute
	}
	if opts.MaxHeaderBytes <= 0 {
		opts.MaxHeaderBytes = 64 << 10
	}
}

// isTimeout reports whether err is a read that ran out of time: a request
// body that did not arrive within ReadTimeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// guard serves h only to requests for a Host the server answers (see
// Options.AllowedHosts) and refuses state-changing requests that a
// browser sends from another origin (http.CrossOriginProtection, by
// Sec-Fetch-Site or Origin against Host).
func (s *Server) guard(h http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			writeError(w, errorf(http.StatusMisdirectedRequest, "host_not_allowed",
				"this server does not answer for Host %q: %s; name it with --allowed-hosts (Options.AllowedHosts) to serve it", r.Host, s.hostRule()))
			return
		}
		if err := cop.Check(r); err != nil {
			writeError(w, errorf(http.StatusForbidden, "cross_origin",
				"%s %s from another site (Origin %q, Sec-Fetch-Site %q) is refused: a web page may change this server's data only from the server's own origin",
				r.Method, r.URL.Path, r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site")))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// hostRule says which Host names are served.
func (s *Server) hostRule() string {
	if !s.locked() {
		return "without API keys it answers only localhost, 127.0.0.1 and [::1] (and the allowed hosts), so that a web page cannot reach it through a DNS name that points at this machine"
	}
	return "it answers only localhost, 127.0.0.1, [::1] and the allowed hosts"
}

// hostAllowed reports whether the server answers requests for host (a
// Host header, with or without a port). Loopback names always are;
// without API keys nothing else is unless listed in AllowedHosts; with
// keys every host is unless AllowedHosts lists some. An entry "*" allows
// every host, "*.example.com" every name under example.com.
func (s *Server) hostAllowed(host string) bool {
	if s.locked() && len(s.opts.AllowedHosts) == 0 {
		return true
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.ToLower(strings.TrimSuffix(strings.Trim(name, "[]"), "."))
	if ip := net.ParseIP(name); name == "localhost" || (ip != nil && ip.IsLoopback()) {
		return true
	}
	for _, a := range s.opts.AllowedHosts {
		a = strings.ToLower(strings.TrimSpace(a))
		if a == "*" || a == name || (strings.HasPrefix(a, "*.") && strings.HasSuffix(name, a[1:])) {
			return name != ""
		}
	}
	return false
}

// checkJSON refuses a request whose body is not JSON: every API endpoint,
// the server's own and those mounted with HandleAPI, reads JSON, and the
// check keeps a web page's form or text/plain post (which a browser sends
// to any site without asking) from reaching them.
func checkJSON(r *http.Request) error {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "request body must be application/json, not %q", ct)
	}
	return nil
}
