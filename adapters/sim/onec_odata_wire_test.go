package sim_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/onecodata/wirecorpus"
	"github.com/oncegate/oncegate/adapters/sim"
)

// TestWireCorpus_Simulator sends each request of the recorded corpus to
// the OData simulator, put in the mode the exchange names, and compares
// the answer with the recording: the status, 1C's error code, and the
// shape (the entity's properties, a collection's length, the values the
// exchange names, $metadata's types and lengths). Where they disagree
// the recording wins: the simulator is what is wrong.
func TestWireCorpus_Simulator(t *testing.T) {
	t.Parallel()
	corpus, err := wirecorpus.Load("../onecodata/testdata/wire")
	if err != nil {
		t.Fatal(err)
	}
	for name, ex := range corpus {
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(sim.New())
			defer srv.Close()
			base := srv.URL + sim.ODataPath + "/"
			ref := newRef()
			settings := string(ex.Sim)
			if settings == "" {
				settings = "{}"
			}
			resp, err := http.Post(srv.URL+"/_sim/onec_odata/settings", "application/json", strings.NewReader(settings))
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("settings %s: %v %v", settings, resp, err)
			}
			resp.Body.Close()
			for _, g := range ex.Given {
				given, ok := corpus[g]
				if !ok {
					t.Fatalf("given %s is not in the corpus", g)
				}
				if status, _, body := send(t, base, given.Request, ref); status/100 != 2 {
					t.Fatalf("given %s: %d %s", g, status, body)
				}
			}
			status, h, body := send(t, base, ex.Request, ref)
			a := ex.Answer
			if status != a.Status {
				t.Fatalf("status %d, recorded %d: %s", status, a.Status, body)
			}
			for k, v := range a.Headers {
				if want := wirecorpus.Fill(v, ref, "", base); h.Get(k) != want {
					t.Errorf("%s %q, recorded %q", k, h.Get(k), want)
				}
			}
			switch {
			case a.XML != "":
				compareXML(t, a, body)
			case len(a.Body) > 0:
				var rec map[string]any
				if err := json.Unmarshal(wirecorpus.FillJSON(a.Body, ref, "", base), &rec); err != nil {
					t.Fatal(err)
				}
				var got map[string]any
				if err := json.Unmarshal(body, &got); err != nil {
					t.Fatalf("the simulator's answer is not JSON: %s", body)
				}
				compareJSON(t, a, ref, rec, got)
			}
		})
	}
}

// send makes req at the simulator's root as the adapter would: the names'
// letters and spaces percent-encoded, the key's parentheses and quotes
// and the options' '$' literal; JSON asked for unless accept is "xml".
func send(t *testing.T, base string, req wirecorpus.Request, ref string) (int, http.Header, []byte) {
	t.Helper()
	var body io.Reader
	if req.Body != nil {
		b, _ := json.Marshal(req.Body)
		body = bytes.NewReader([]byte(wirecorpus.Fill(string(b), ref, "", base)))
	}
	r, err := http.NewRequest(req.Method, base+encode(wirecorpus.Fill(req.Path, ref, "", base)), body)
	if err != nil {
		t.Fatal(err)
	}
	pw := sim.ODataPassword
	if req.Password == "wrong" {
		pw = "not-the-password"
	}
	r.SetBasicAuth("buh", pw)
	if req.Accept != "xml" {
		r.Header.Set("Accept", "application/json")
	}
	if body != nil {
		r.Header.Set("Content-Type", "application/json;charset=utf-8")
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// encode percent-encodes the bytes of s that are a space or not ASCII.
func encode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || c == ' ' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// compareJSON compares a JSON answer with the recording: 1C's error code,
// or every property the recording shows, the values it names, a
// collection's length, the properties it says are absent.
func compareJSON(t *testing.T, a wirecorpus.Answer, ref string, rec, got map[string]any) {
	t.Helper()
	if re, ok := rec["odata.error"].(map[string]any); ok {
		ge, _ := got["odata.error"].(map[string]any)
		if ge == nil || ge["code"] != re["code"] {
			t.Fatalf("error %v, recorded code %v", got, re["code"])
		}
		if gm, _ := ge["message"].(map[string]any); gm == nil || gm["value"] == "" {
			t.Errorf("error without a message: %v", got)
		}
		return
	}
	if rl, ok := rec["value"].([]any); ok {
		gl, _ := got["value"].([]any)
		if len(gl) != a.CompareList || len(rl) != a.CompareList {
			t.Fatalf("%d in the collection, recorded %d: %v", len(gl), len(rl), got)
		}
		if got["odata.metadata"] != rec["odata.metadata"] {
			t.Errorf("odata.metadata %v, recorded %v", got["odata.metadata"], rec["odata.metadata"])
		}
		for i := range gl {
			sameShape(t, fmt.Sprintf("value[%d]", i), rl[i].(map[string]any), gl[i].(map[string]any))
		}
		return
	}
	sameShape(t, "entity", rec, got)
	if a.OtherKey && got["Ref_Key"] == ref {
		t.Errorf("Ref_Key %v: recorded as another than the one sent", got["Ref_Key"])
	}
	for _, k := range a.Compare {
		if fmt.Sprint(got[k]) != fmt.Sprint(rec[k]) {
			t.Errorf("%s %v, recorded %v", k, got[k], rec[k])
		}
	}
	for _, k := range a.Absent {
		if _, ok := got[k]; ok {
			t.Errorf("%s is in the answer, recorded absent", k)
		}
	}
}

// sameShape checks got has every property rec has, of the same JSON kind,
// a tabular section's rows too; odata.metadata must be the same.
func sameShape(t *testing.T, at string, rec, got map[string]any) {
	t.Helper()
	for k, rv := range rec {
		gv, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s: no %s, which the recording has", at, k)
		case fmt.Sprintf("%T", rv) != fmt.Sprintf("%T", gv):
			t.Errorf("%s: %s is %T (%v), recorded %T (%v)", at, k, gv, gv, rv, rv)
		case k == "odata.metadata" && gv != rv:
			t.Errorf("%s: odata.metadata %v, recorded %v", at, gv, rv)
		}
		if rows, isRows := rv.([]any); isRows && len(rows) > 0 {
			grows, _ := gv.([]any)
			if len(grows) != len(rows) {
				t.Errorf("%s: %d rows in %s, recorded %d", at, len(grows), k, len(rows))
				continue
			}
			for i := range rows {
				sameShape(t, fmt.Sprintf("%s.%s[%d]", at, k, i), rows[i].(map[string]any), grows[i].(map[string]any))
			}
		}
	}
}

// edmx is the part of $metadata compared: each entity and complex type's
// properties with their types and lengths, and the entity sets.
type edmx struct {
	Types []struct {
		Name  string `xml:"Name,attr"`
		Props []struct {
			Name      string `xml:"Name,attr"`
			Type      string `xml:"Type,attr"`
			MaxLength string `xml:"MaxLength,attr"`
		} `xml:"Property"`
	} `xml:"DataServices>Schema>EntityType"`
	Complex []struct {
		Name  string `xml:"Name,attr"`
		Props []struct {
			Name string `xml:"Name,attr"`
			Type string `xml:"Type,attr"`
		} `xml:"Property"`
	} `xml:"DataServices>Schema>ComplexType"`
	Sets []struct {
		Name string `xml:"Name,attr"`
	} `xml:"DataServices>Schema>EntityContainer>EntitySet"`
}

// compareXML compares an XML answer: 1C's XML error's code, or $metadata's
// types, properties, lengths and sets.
func compareXML(t *testing.T, a wirecorpus.Answer, body []byte) {
	t.Helper()
	if a.Code != "" {
		var e struct {
			XMLName xml.Name
			Code    string `xml:"code"`
			Message string `xml:"message"`
		}
		if err := xml.Unmarshal(body, &e); err != nil || e.XMLName.Local != "error" || e.Code != a.Code || e.Message == "" {
			t.Fatalf("XML error %+v (%v), recorded code %s: %s", e, err, a.Code, body)
		}
		return
	}
	var rec, got edmx
	if err := xml.Unmarshal([]byte(a.XML), &rec); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(body, &got); err != nil {
		t.Fatalf("$metadata is not EDMX: %v", err)
	}
	props := map[string]string{}
	for _, ty := range got.Types {
		for _, p := range ty.Props {
			props[ty.Name+"."+p.Name] = p.Type + " " + p.MaxLength
		}
	}
	for _, ty := range got.Complex {
		for _, p := range ty.Props {
			props[ty.Name+"."+p.Name] = p.Type
		}
	}
	for _, ty := range rec.Types {
		for _, p := range ty.Props {
			if want := p.Type + " " + p.MaxLength; props[ty.Name+"."+p.Name] != want {
				t.Errorf("%s.%s is %q, recorded %q", ty.Name, p.Name, props[ty.Name+"."+p.Name], want)
			}
		}
	}
	for _, ty := range rec.Complex {
		for _, p := range ty.Props {
			if props[ty.Name+"."+p.Name] != p.Type {
				t.Errorf("%s.%s is %q, recorded %q", ty.Name, p.Name, props[ty.Name+"."+p.Name], p.Type)
			}
		}
	}
	sets := map[string]bool{}
	for _, s := range got.Sets {
		sets[s.Name] = true
	}
	for _, s := range rec.Sets {
		if !sets[s.Name] {
			t.Errorf("no entity set %s, which the recording has", s.Name)
		}
	}
}

// newRef is a fresh key for an exchange's {ref}.
func newRef() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x50
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
