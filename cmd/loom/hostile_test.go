package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loomkit/loom/cmd/loom/internal/hostile"
	"github.com/loomkit/loom/internal/testenv"
)

// Bounds of the hostile-upload test: the server runs under an address
// space limit (Go reserves address space it does not use, so this is
// well above the bound that matters), and its peak resident memory must
// stay at or below maxRSS whatever it is sent.
const (
	hostileAddressSpace = 6 << 30
	hostileMaxRSS       = 1 << 30
	hostileRunTimeout   = 2 * time.Minute
)

// TestHostileUploads sends every item of a corpus of hostile uploads
// (cmd/loom/internal/hostile) to a real `loom serve` under an address
// space limit, through the report agent: the upload, a run on it, the
// thread's state, and the template's JRXML, preview PNG, PDF and
// versions when it has them. After each item the server is alive and
// answers /healthz, no response was a 5xx, named the canaries (a file's
// contents and an environment variable), an owner key or a server path,
// a refused upload left no thread, and the peak resident memory of the
// server during the item stayed at or below 1 GiB. At the end the
// server is SIGKILLed and started again on the same database, and comes
// back.
func TestHostileUploads(t *testing.T) {
	needHostileTools(t)
	if testing.Short() {
		t.Skip("sends a corpus of hostile uploads to a real server (about two minutes); skipped with -short")
	}
	dir := t.TempDir()
	canaryFile := filepath.Join(dir, "canary.txt")
	fileCanary, envCanary, apiKey := "canary-file-"+randomHex(t), "canary-env-"+randomHex(t), "hostile-key-"+randomHex(t)
	if err := os.WriteFile(canaryFile, []byte(fileCanary+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	items, err := hostile.Corpus(canaryFile)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"LOOM_TEST_MAIN=1", "HOME=" + dir, "TMPDIR=" + tmp, "LANG=C.UTF-8",
		"LOOM_API_KEYS=" + apiKey, "LOOM_CANARY=" + envCanary, "LOOM_RATE=-1", "LOOM_MAX_THREADS=-1"}
	for _, name := range []string{"PATH", "LOOM_REPORT_FONT", "TESSDATA_PREFIX", "GOCOVERDIR"} {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	if _, err := exec.LookPath("xmllint"); err == nil {
		xsdFile := filepath.Join(dir, "jasperreport.xsd")
		if err := os.WriteFile(xsdFile, []byte(permissiveXSD), 0o644); err != nil {
			t.Fatal(err)
		}
		env = append(env, "LOOM_JRXML_XSD="+xsdFile)
	} else {
		t.Log("xmllint is not installed (Debian package libxml2-utils): templates are not validated against a schema")
	}

	h := &hostileRun{t: t, dir: dir, env: env, key: apiKey,
		secrets: map[string]string{"the canary file's contents": fileCanary, "the canary environment variable": envCanary, "the API key": apiKey},
		paths:   []string{tmp, filepath.Join(dir, "loom")}}
	h.db = filepath.Join(dir, "loom-1.db")
	h.srv = h.start(h.db)
	defer func() { h.srv.kill() }()
	if vm := procStatus(h.srv.pid, "VmPeak"); vm > 0 {
		t.Logf("the idle server: %d MiB of address space, %d MiB resident", vm>>20, procStatus(h.srv.pid, "VmRSS")>>20)
	}

	var results []*itemResult
	for i := 0; i < len(items); i++ {
		results = append(results, h.try(items[i]))
		if items[i].Name == "xlsx-control" {
			// The picture control is the workbook control's preview: a
			// form with labels, drawn by the server itself.
			img := hostile.Item{Name: "png-control", Filename: "form.png", ContentType: "image/png", Control: true}
			if code, b, err := h.get("/api/v1/report/threads/h-xlsx-control/preview.png"); err == nil && code == 200 {
				img.Data = b
			}
			items = append(items[:i+1], append([]hostile.Item{img}, items[i+1:]...)...)
		}
	}

	// SIGKILLed and started again on the same database, the server comes
	// back, and its recovery of what was left does not bring it down.
	// What a killed server leaves in its TMPDIR (a page being read, named
	// after its process, as every temporary folder of Loom's is) is gone
	// once the next one has started.
	killed := h.srv.pid
	h.srv.kill()
	stale := filepath.Join(tmp, fmt.Sprintf("loom-ocr-%d-1", killed))
	if err := os.MkdirAll(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "page.png"), []byte(fileCanary), 0o600); err != nil {
		t.Fatal(err)
	}
	h.srv = h.start(h.db)
	time.Sleep(3 * time.Second)
	restart := &itemResult{name: "restart-after-sigkill", upload: "-", run: "-"}
	h.r = restart
	if !h.srv.alive() {
		restart.fail("the server died after a restart on the same database: %s", h.srv.tail())
	} else if code, _, err := h.get("/healthz"); err != nil || code != 200 {
		restart.fail("after a restart on the same database /healthz is %d (%v)", code, err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, fmt.Sprintf("loom-*-%d-*", killed))); len(left) > 0 {
		restart.fail("the killed server's temporary folders are still there after the restart: %q", left)
	}
	results = append(results, restart)

	t.Logf("%-32s %-6s %8s  %-s", "item", "upload", "peak RSS", "run")
	for _, r := range results {
		t.Logf("%-32s %-6s %5d MiB  %.160s", r.name, r.upload, r.peak>>20, r.run)
	}
	for _, r := range results {
		if len(r.problems) > 0 {
			t.Errorf("%s: %s", r.name, strings.Join(r.problems, "; "))
		}
	}
}

// permissiveXSD is a schema any JasperReports template is valid
// against: it makes the report agent run xmllint on every template.
const permissiveXSD = `<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="http://jasperreports.sourceforge.net/jasperreports" elementFormDefault="qualified">
	<xs:element name="jasperReport">
		<xs:complexType>
			<xs:sequence><xs:any processContents="skip" minOccurs="0" maxOccurs="unbounded"/></xs:sequence>
			<xs:anyAttribute processContents="skip"/>
		</xs:complexType>
	</xs:element>
</xs:schema>
`

// needHostileTools skips the test where it cannot run as meant (a
// failure under CI=true): it needs Linux (/proc), prlimit, and the
// programs the report agent reads uploads with.
func needHostileTools(t *testing.T) {
	t.Helper()
	var missing []string
	if runtime.GOOS != "linux" {
		missing = append(missing, "Linux (/proc/PID/status)")
	}
	for _, p := range []struct{ program, pkg string }{{"prlimit", "util-linux"}, {"xmllint", "libxml2-utils"}, {"tesseract", "tesseract-ocr"}, {"pdftoppm", "poppler-utils"}} {
		if _, err := exec.LookPath(p.program); err != nil {
			missing = append(missing, p.program+" (Debian package "+p.pkg+")")
		}
	}
	if len(missing) == 0 {
		return
	}
	err := fmt.Errorf("missing %s", strings.Join(missing, ", "))
	if !testenv.CI() && runtime.GOOS == "linux" && !strings.HasPrefix(missing[0], "prlimit") {
		t.Logf("the hostile-upload test %v: those uploads are refused before the program would run", err)
		return
	}
	testenv.Need(t, "the hostile-upload test needs Linux, prlimit and the programs uploads are read with", err)
}

// randomHex is 16 random hex digits.
func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// itemResult is what one item did.
type itemResult struct {
	name     string
	upload   string // the upload's status
	run      string // how its run ended
	peak     int64  // peak resident bytes of the server during the item
	problems []string
}

func (r *itemResult) fail(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// hostileRun is the test's server and what every response is checked
// for.
type hostileRun struct {
	t       *testing.T
	dir     string
	env     []string
	key     string
	db      string
	srv     *loomProc
	secrets map[string]string // what no response may contain, by what it is
	paths   []string          // server paths no response may name
	dbs     int               // databases started on
	r       *itemResult       // the item being tried
}

// ownerKey is how the server names a key internally.
var ownerKey = regexp.MustCompile(`key:[0-9a-f]{8,}`)

// try sends one item and checks what came back.
func (h *hostileRun) try(it hostile.Item) *itemResult {
	r := &itemResult{name: it.Name, upload: "-", run: "-"}
	h.r = r
	if f, err := os.OpenFile(fmt.Sprintf("/proc/%d/clear_refs", h.srv.pid), os.O_WRONLY, 0); err == nil {
		f.WriteString("5") // VmHWM from now on
		f.Close()
	}
	thread := "h-" + it.Name
	base := "/api/v1/report/threads/" + thread

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	hdr := textproto.MIMEHeader{}
	hdr.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, it.Filename))
	hdr.Set("Content-Type", it.ContentType)
	pw, _ := mw.CreatePart(hdr)
	pw.Write(it.Data)
	mw.Close()
	code, b, err := h.do("POST", base+"/uploads", mw.FormDataContentType(), &body)
	switch {
	case err != nil:
		r.upload = "error"
		r.fail("upload: %v", err)
	case code == http.StatusCreated:
		r.upload = "201"
		var up struct{ ID string }
		if err := json.Unmarshal(b, &up); err != nil || up.ID == "" {
			r.fail("upload: 201 without an id: %.200s", b)
			break
		}
		// The state of a thread made only by an upload.
		if code, b, err := h.get("/threads/" + thread + "/state"); err == nil && code != 200 {
			r.fail("state of the upload-only thread: %d %.200s", code, b)
		}
		h.runOn(it, thread, up.ID)
	default:
		r.upload = strconv.Itoa(code)
		if it.Control {
			r.fail("the control upload was refused: %d %.200s", code, b)
		}
		var e struct {
			Error struct{ Code, Message string }
		}
		if json.Unmarshal(b, &e); code >= 400 && code < 500 && e.Error.Message == "" {
			r.fail("upload refused with %d and no message: %.200s", code, b)
		}
		// A refused upload stores nothing and makes no thread.
		if code, _, err := h.get("/threads/" + thread); err == nil && code != 404 {
			r.fail("the refused upload left a thread (GET /threads/%s is %d)", thread, code)
		}
	}

	if !h.srv.alive() {
		r.fail("the server died: %s", h.srv.tail())
		h.srv = h.start(h.db)
		time.Sleep(2 * time.Second) // recovery runs what was left
		if !h.srv.alive() {
			r.fail("and died again on restart: %s", h.srv.tail())
			h.dbs++
			h.db = filepath.Join(h.dir, fmt.Sprintf("loom-%d.db", h.dbs+1))
			h.srv = h.start(h.db)
		}
		return r
	}
	r.peak = procStatus(h.srv.pid, "VmHWM")
	if r.peak > hostileMaxRSS {
		r.fail("peak RSS %d MiB, over %d MiB", r.peak>>20, hostileMaxRSS>>20)
	}
	if code, b, err := h.get("/healthz"); err != nil || code != 200 {
		r.fail("/healthz: %d %.200s (%v)", code, b, err)
	}
	return r
}

// runOn runs the report agent on an upload and fetches what the thread
// then has.
func (h *hostileRun) runOn(it hostile.Item, thread, upload string) {
	r := h.r
	in, _ := json.Marshal(map[string]any{"assistant_id": "report", "input": map[string]string{"upload": upload}, "if_not_exists": "create"})
	code, b, err := h.do("POST", "/threads/"+thread+"/runs/wait", "application/json", bytes.NewReader(in))
	if err != nil {
		r.run = "no answer"
		r.fail("run: %v", err)
		return
	}
	var res struct {
		Error *struct{ Error, Message string } `json:"__error__"`
		Turn  struct{ Reply string }           `json:"turn"`
		JRXML string                           `json:"current_jrxml"`
	}
	json.Unmarshal(b, &res)
	switch {
	case code != 200:
		r.run = fmt.Sprintf("%d %.50s", code, b)
		if code < 500 && code >= 400 {
			r.fail("the run was refused: %d %.200s", code, b)
		}
	case res.Error != nil:
		r.run = "failed: " + res.Error.Message
		if res.Error.Message == "" {
			r.fail("the run failed without saying why: %.200s", b)
		}
	default:
		r.run = "reply: " + strings.ReplaceAll(res.Turn.Reply, "\n", " ")
		if res.Turn.Reply == "" {
			r.fail("the run ended without a reply: %.200s", b)
		}
	}
	if !h.srv.alive() {
		return
	}
	files := map[string]int{}
	for _, f := range []string{"current.jrxml", "preview.png", "current.pdf", "versions", "versions/1.png", "versions/1.pdf"} {
		code, b, err := h.get("/api/v1/report/threads/" + thread + "/" + f)
		if err != nil {
			r.fail("GET %s: %v", f, err)
			return
		}
		files[f] = code
		if f == "preview.png" && code == 200 && !bytes.HasPrefix(b, []byte("\x89PNG")) {
			r.fail("preview.png is 200 but no PNG")
		}
	}
	if it.Control && (res.Error != nil || res.JRXML == "" || files["preview.png"] != 200 || files["current.pdf"] != 200) {
		r.fail("the control did not become a template with a preview and a PDF: run %q, preview %d, PDF %d", r.run, files["preview.png"], files["current.pdf"])
	}
}

// get is a GET of path.
func (h *hostileRun) get(path string) (int, []byte, error) {
	return h.do("GET", path, "", nil)
}

// hostileClient waits for the longest run.
var hostileClient = &http.Client{Timeout: hostileRunTimeout}

// do sends a request with the API key and checks the response: no 5xx,
// no secret, no owner key, no server path.
func (h *hostileRun) do(method, path, ctype string, body io.Reader) (int, []byte, error) {
	req, err := http.NewRequest(method, h.srv.url+path, body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+h.key)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := hostileClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, b, err
	}
	r := h.r
	if r == nil {
		return resp.StatusCode, b, nil
	}
	where := method + " " + strings.TrimPrefix(path, "/api/v1/report/threads/")
	if resp.StatusCode >= 500 {
		r.fail("%s: %d %.200s", where, resp.StatusCode, b)
	}
	all := string(b)
	for k, vs := range resp.Header {
		all += "\n" + k + ": " + strings.Join(vs, ", ")
	}
	for what, s := range h.secrets {
		if strings.Contains(all, s) {
			r.fail("%s gave away %s", where, what)
		}
	}
	if m := ownerKey.FindString(all); m != "" {
		r.fail("%s names an owner key (%s)", where, m)
	}
	for _, p := range h.paths {
		if strings.Contains(all, p) {
			r.fail("%s names a server path (%s)", where, p)
		}
	}
	return resp.StatusCode, b, nil
}

// loomProc is a `loom serve` process under an address space limit.
type loomProc struct {
	cmd  *exec.Cmd
	url  string
	pid  int
	done chan struct{} // closed when the process has ended
	mu   sync.Mutex
	out  []string // its last lines of output
}

// start runs `loom serve` (this test binary as loom) on the SQLite file
// db under prlimit, and waits for its first line.
func (h *hostileRun) start(db string) *loomProc {
	h.t.Helper()
	self, err := os.Executable()
	if err != nil {
		h.t.Fatal(err)
	}
	cmd := exec.Command("prlimit", "--as="+strconv.Itoa(hostileAddressSpace), "--", self, "serve", "--addr", "127.0.0.1:0")
	cmd.Dir = h.dir
	cmd.Env = append(append([]string{}, h.env...), "LOOM_DATABASE_URL=sqlite://"+db)
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		h.t.Fatalf("start loom serve: %v", err)
	}
	p := &loomProc{cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	first := make(chan string, 1)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.read(stdout, first) }()
	go func() { defer wg.Done(); p.read(stderr, nil) }()
	go func() { wg.Wait(); cmd.Wait(); close(p.done) }()
	select {
	case line := <-first:
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[3], "http://") {
			p.kill()
			h.t.Fatalf("loom serve's first line: %q", line)
		}
		p.url = strings.TrimSuffix(f[3], "/")
	case <-p.done:
		h.t.Fatalf("loom serve ended at start: %s", p.tail())
	case <-time.After(time.Minute):
		p.kill()
		h.t.Fatalf("loom serve did not start in a minute: %s", p.tail())
	}
	return p
}

// read keeps the last lines of r, sending the first to first.
func (p *loomProc) read(r io.Reader, first chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if first != nil {
			first <- sc.Text()
			first = nil
		}
		p.mu.Lock()
		p.out = append(p.out, sc.Text())
		if len(p.out) > 40 {
			p.out = p.out[len(p.out)-40:]
		}
		p.mu.Unlock()
	}
	io.Copy(io.Discard, r)
}

// tail is the process's last lines, the first fatal error first.
func (p *loomProc) tail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.out {
		if strings.HasPrefix(l, "fatal error") || strings.HasPrefix(l, "panic:") || strings.Contains(l, "out of memory") {
			return l
		}
	}
	if n := len(p.out); n > 0 {
		return strings.Join(p.out[max(0, n-3):], " | ")
	}
	if s := p.cmd.ProcessState; s != nil {
		return s.String()
	}
	return "no output"
}

// alive says whether the process still runs.
func (p *loomProc) alive() bool {
	select {
	case <-p.done:
		return false
	case <-time.After(100 * time.Millisecond):
		return true
	}
}

// kill ends the process with SIGKILL and waits for it.
func (p *loomProc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// procStatus is a field of /proc/PID/status in bytes (0 when it cannot
// be read).
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			f := strings.Fields(v)
			if len(f) == 0 {
				return 0
			}
			n, _ := strconv.ParseInt(f[0], 10, 64)
			return n << 10
		}
	}
	return 0
}
