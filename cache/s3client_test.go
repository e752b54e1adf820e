package cache

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// s3SigCases are requests with their Authorization header as computed by
// the AWS SDK's Signature Version 4 signer (aws-sdk-go-v2; the gotpu_remote
// build checks them against it live, TestS3SignatureMatchesAWSSDK).
var s3SigCases = []struct {
	name   string
	store  func() *s3Store
	method string
	key    string
	body   []byte
	want   string
}{
	{"GET virtual-hosted", func() *s3Store {
		return &s3Store{bucket: "gotpu-cache", region: "us-east-1", scheme: "https", creds: s3Creds{id: "AKIDEXAMPLE", secret: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}}
	}, "GET", "v1/ab/abcdef.gtpc", nil,
		"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261204/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=cd0a93d9d5d0612ce83d8433ca3cf2ee813464afc9809cf141bdfe3dcf29ae79"},
	{"PUT path-style with session token", func() *s3Store {
		return &s3Store{bucket: "b", region: "eu-west-3", scheme: "http", host: "127.0.0.1:9000", pathStyle: true,
			creds: s3Creds{id: "AKID2", secret: "secret2", token: "session-token"}}
	}, "PUT", "pre/v1/00/0011.gtpc", []byte("entry bytes"),
		"AWS4-HMAC-SHA256 Credential=AKID2/20261204/eu-west-3/s3/aws4_request, SignedHeaders=content-length;content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature=8e437086d5deefe24c30ce390ee9df4c3a5140444480ad266ce24a7dd4d41e39"},
}

// TestS3Signature: the built-in client signs requests exactly as the AWS
// SDK does.
func TestS3Signature(t *testing.T) {
	at := time.Date(2026, 12, 4, 13, 45, 0, 0, time.UTC)
	for _, tc := range s3SigCases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.store()
			s.now = func() time.Time { return at }
			req, err := s.newRequest(context.Background(), tc.method, tc.key, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if got := req.Header.Get("Authorization"); got != tc.want {
				t.Fatalf("Authorization\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestS3StoreConfig: URL parameters and credential sources of the built-in
// S3 client, and the errors that name what is missing.
func TestS3StoreConfig(t *testing.T) {
	credFile := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(credFile, []byte("[default]\naws_access_key_id = FILEID\naws_secret_access_key = filesecret\n\n[other]\naws_access_key_id=OTHER\naws_secret_access_key=othersecret\naws_session_token = tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		url     string
		env     map[string]string
		wantURL string // of key "k/x"
		creds   s3Creds
		wantErr string
	}{
		{"aws virtual-hosted, env keys", "s3://bkt?region=us-west-2", map[string]string{"AWS_ACCESS_KEY_ID": "ID", "AWS_SECRET_ACCESS_KEY": "S"},
			"https://bkt.s3.us-west-2.amazonaws.com/k/x", s3Creds{id: "ID", secret: "S"}, ""},
		{"endpoint path-style http", "s3://bkt?endpoint=http://127.0.0.1:9000&use_path_style=true&region=r", map[string]string{"AWS_ACCESS_KEY_ID": "ID", "AWS_SECRET_ACCESS_KEY": "S", "AWS_SESSION_TOKEN": "T"},
			"http://127.0.0.1:9000/bkt/k/x", s3Creds{id: "ID", secret: "S", token: "T"}, ""},
		{"disable_https, region from env", "s3://bkt?endpoint=minio.local&disable_https=true", map[string]string{"AWS_REGION": "eu-1", "AWS_ACCESS_KEY_ID": "ID", "AWS_SECRET_ACCESS_KEY": "S"},
			"http://bkt.minio.local/k/x", s3Creds{id: "ID", secret: "S"}, ""},
		{"shared credentials default profile", "s3://bkt?region=r", map[string]string{"AWS_SHARED_CREDENTIALS_FILE": credFile},
			"https://bkt.s3.r.amazonaws.com/k/x", s3Creds{id: "FILEID", secret: "filesecret"}, ""},
		{"shared credentials named profile", "s3://bkt?region=r", map[string]string{"AWS_SHARED_CREDENTIALS_FILE": credFile, "AWS_PROFILE": "other"},
			"https://bkt.s3.r.amazonaws.com/k/x", s3Creds{id: "OTHER", secret: "othersecret", token: "tok"}, ""},
		{"anonymous", "s3://bkt?region=r&anonymous=true", nil, "https://bkt.s3.r.amazonaws.com/k/x", s3Creds{}, ""},
		{"no credentials", "s3://bkt?region=r", map[string]string{"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(t.TempDir(), "none")}, "", s3Creds{}, "-tags gotpu_remote"},
		{"missing profile", "s3://bkt?region=r", map[string]string{"AWS_SHARED_CREDENTIALS_FILE": credFile, "AWS_PROFILE": "nope"}, "", s3Creds{}, `profile "nope"`},
		{"no region", "s3://bkt", map[string]string{"AWS_ACCESS_KEY_ID": "ID"}, "", s3Creds{}, "needs a region"},
		{"unknown parameter", "s3://bkt?region=r&awssdk=v1", nil, "", s3Creds{}, `"awssdk" is not supported`},
		{"no bucket", "s3://?region=r", nil, "", s3Creds{}, "without a bucket"},
		{"gs without the tag", "gs://bkt", nil, "", s3Creds{}, "gotpu_gcs"},
		{"file:// not a directory", "file:///nonexistent/dir", nil, "", s3Creds{}, "not a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION"} {
				t.Setenv(k, "")
			}
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			st, _, err := openObjectStore(tc.url)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := st.(*s3Store)
			if got := s.objectURL("k/x").String(); got != tc.wantURL {
				t.Errorf("object URL %s, want %s", got, tc.wantURL)
			}
			if s.creds != tc.creds {
				t.Errorf("credentials %+v, want %+v", s.creds, tc.creds)
			}
		})
	}
}

// TestRemotePrefix: the "prefix" parameter puts entries under a folder of
// the bucket.
func TestRemotePrefix(t *testing.T) {
	dir := t.TempDir()
	c, _ := newTestCache(t, Options{NoDisk: true, Remote: "file://" + filepath.ToSlash(dir) + "?prefix=team/"})
	if _, _, err := c.Get(context.Background(), baseKey(), (&counter{payload: []byte("p")}).compile); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "team", filepath.FromSlash(entryRelPath(baseKey().Hash())))); err != nil {
		t.Fatalf("entry not under the prefix: %v", err)
	}
}

// TestS3StoreResponses: how the built-in client maps S3's answers: 404 is
// a miss, other failures are errors quoting S3's message, an object over
// the limit is errTooLarge, and a PUT sends the bytes with a length.
func TestS3StoreResponses(t *testing.T) {
	var gotPut []byte
	var gotLen int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			http.Error(w, "unsigned", http.StatusForbidden)
			return
		}
		switch r.URL.Path {
		case "/b/missing":
			http.Error(w, "<Error><Code>NoSuchKey</Code></Error>", http.StatusNotFound)
		case "/b/broken":
			http.Error(w, "<Error><Code>InternalError</Code></Error>", http.StatusInternalServerError)
		case "/b/big":
			w.Write(make([]byte, 100))
		case "/b/ok":
			if r.Method == http.MethodPut {
				gotPut, _ = io.ReadAll(r.Body)
				gotLen = r.ContentLength
				return
			}
			w.Write([]byte("hello"))
		}
	}))
	defer srv.Close()
	s := &s3Store{bucket: "b", region: "r", scheme: "http", host: strings.TrimPrefix(srv.URL, "http://"), pathStyle: true,
		creds: s3Creds{id: "id", secret: "s"}, client: srv.Client(), now: time.Now}
	ctx := context.Background()
	tests := []struct {
		key     string
		limit   int64
		want    string
		wantErr error
		errText string
	}{
		{"ok", 10, "hello", nil, ""},
		{"missing", 10, "", errRemoteMiss, ""},
		{"broken", 10, "", nil, "InternalError"},
		{"big", 10, "", errTooLarge, ""},
		{"big", 100, string(make([]byte, 100)), nil, ""},
	}
	for _, tc := range tests {
		got, err := s.get(ctx, tc.key, tc.limit)
		switch {
		case tc.errText != "":
			if err == nil || !strings.Contains(err.Error(), tc.errText) {
				t.Errorf("get %s: %v, want an error saying %s", tc.key, err, tc.errText)
			}
		case !errors.Is(err, tc.wantErr) || string(got) != tc.want:
			t.Errorf("get %s (limit %d): %d bytes, %v; want %d bytes, %v", tc.key, tc.limit, len(got), err, len(tc.want), tc.wantErr)
		}
	}
	if err := s.put(ctx, "ok", []byte("ab"), []byte("cd")); err != nil || string(gotPut) != "abcd" || gotLen != 4 {
		t.Errorf("put: %v, server got %q with length %d", err, gotPut, gotLen)
	}
	if err := s.put(ctx, "broken", []byte("x")); err == nil {
		t.Error("put to a failing server succeeded")
	}
}
