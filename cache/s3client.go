package cache

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// s3Store is a minimal S3 client: GET and PUT of whole objects, signed with
// AWS Signature Version 4, for AWS S3 and S3-compatible stores (MinIO,
// Ceph, R2, GCS's XML API). It reads the parameters of gocloud.dev's
// s3blob URLs that matter to it (region, endpoint, use_path_style,
// disable_https, anonymous) and static credentials from the environment
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) or the
// shared credentials file (AWS_SHARED_CREDENTIALS_FILE, else
// ~/.aws/credentials, profile AWS_PROFILE or "default"). Other credential
// sources (instance roles, SSO, ...) need the AWS SDK: -tags gotpu_remote.
type s3Store struct {
	bucket    string
	region    string
	scheme    string // "https" or "http"
	host      string // endpoint host[:port]; "" for AWS
	pathStyle bool
	creds     s3Creds // zero for anonymous requests
	client    *http.Client
	now       func() time.Time
}

// s3Creds are static AWS credentials.
type s3Creds struct{ id, secret, token string }

func newS3Store(bucket string, q url.Values) (*s3Store, error) {
	if bucket == "" {
		return nil, errors.New("s3:// URL without a bucket")
	}
	s := &s3Store{bucket: bucket, scheme: "https", client: http.DefaultClient, now: time.Now}
	anonymous := false
	for k, vs := range q {
		v := vs[0]
		switch k {
		case "region":
			s.region = v
		case "endpoint":
			if e, ok := strings.CutPrefix(v, "http://"); ok {
				s.scheme, v = "http", e
			} else {
				v = strings.TrimPrefix(v, "https://")
			}
			s.host = strings.TrimSuffix(v, "/")
		case "use_path_style", "s3ForcePathStyle":
			s.pathStyle = v == "true"
		case "disable_https":
			if v == "true" {
				s.scheme = "http"
			}
		case "anonymous":
			anonymous = v == "true"
		default:
			return nil, fmt.Errorf("s3:// parameter %q is not supported by this build's S3 client (region, endpoint, use_path_style, disable_https, anonymous, prefix are); -tags gotpu_remote uses the AWS SDK", k)
		}
	}
	if s.region == "" {
		s.region = cmpOr(os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"))
	}
	if s.region == "" {
		return nil, errors.New("s3:// needs a region: add ?region=... to the URL or set AWS_REGION")
	}
	if !anonymous {
		c, err := s3CredsFromEnv()
		if err != nil {
			return nil, err
		}
		s.creds = c
	}
	return s, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// s3CredsFromEnv reads static credentials from the environment, else from
// the shared credentials file.
func s3CredsFromEnv() (s3Creds, error) {
	if id := os.Getenv("AWS_ACCESS_KEY_ID"); id != "" {
		return s3Creds{id: id, secret: os.Getenv("AWS_SECRET_ACCESS_KEY"), token: os.Getenv("AWS_SESSION_TOKEN")}, nil
	}
	file := os.Getenv("AWS_SHARED_CREDENTIALS_FILE")
	if file == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return s3Creds{}, fmt.Errorf("no AWS credentials: AWS_ACCESS_KEY_ID is not set and there is no home directory: %w", err)
		}
		file = filepath.Join(home, ".aws", "credentials")
	}
	profile := cmpOr(os.Getenv("AWS_PROFILE"), "default")
	c, err := readSharedCredentials(file, profile)
	if err != nil {
		return s3Creds{}, fmt.Errorf("no AWS credentials (AWS_ACCESS_KEY_ID is not set; %v); for instance roles, SSO and the AWS SDK's other sources rebuild with -tags gotpu_remote", err)
	}
	return c, nil
}

// readSharedCredentials reads profile's static keys from an AWS shared
// credentials file (INI: [profile] sections of key = value lines).
func readSharedCredentials(file, profile string) (s3Creds, error) {
	f, err := os.Open(file)
	if err != nil {
		return s3Creds{}, err
	}
	defer f.Close()
	var c s3Creds
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			in = strings.TrimSpace(line[1:len(line)-1]) == profile
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !in || !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "aws_access_key_id":
			c.id = strings.TrimSpace(v)
		case "aws_secret_access_key":
			c.secret = strings.TrimSpace(v)
		case "aws_session_token":
			c.token = strings.TrimSpace(v)
		}
	}
	if err := sc.Err(); err != nil {
		return s3Creds{}, fmt.Errorf("read %s: %w", file, err)
	}
	if c.id == "" || c.secret == "" {
		return s3Creds{}, fmt.Errorf("%s has no keys for profile %q", file, profile)
	}
	return c, nil
}

// objectURL returns the URL of key and the Host it is sent to.
func (s *s3Store) objectURL(key string) *url.URL {
	host := s.host
	if host == "" {
		host = "s3." + s.region + ".amazonaws.com"
	}
	p := "/" + key
	if s.pathStyle {
		p = "/" + s.bucket + p
	} else {
		host = s.bucket + "." + host
	}
	return &url.URL{Scheme: s.scheme, Host: host, Path: p, RawPath: s3EscapePath(p)}
}

func (s *s3Store) do(ctx context.Context, method, key string, body []byte) (*http.Response, error) {
	req, err := s.newRequest(ctx, method, key, body)
	if err != nil {
		return nil, err
	}
	return s.client.Do(req)
}

// newRequest returns the signed request for method on key.
func (s *s3Store) newRequest(ctx context.Context, method, key string, body []byte) (*http.Request, error) {
	u := s.objectURL(key)
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.ContentLength = int64(len(body))
	if len(body) == 0 {
		req.Body = http.NoBody // a zero length with a body would be sent chunked
	}
	if method == http.MethodPut {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	s.sign(req, body, s.now())
	return req, nil
}

func (s *s3Store) get(ctx context.Context, key string, limit int64) ([]byte, error) {
	resp, err := s.do(ctx, http.MethodGet, key, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, errRemoteMiss
	}
	if resp.StatusCode != http.StatusOK {
		return nil, s3Error("GET", key, resp)
	}
	if resp.ContentLength > limit {
		return nil, errTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, errTooLarge
	}
	return data, nil
}

func (s *s3Store) put(ctx context.Context, key string, parts ...[]byte) error {
	resp, err := s.do(ctx, http.MethodPut, key, bytes.Join(parts, nil))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s3Error("PUT", key, resp)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return nil
}

// s3Error describes a failed request with the start of S3's XML error body.
func s3Error(method, key string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return fmt.Errorf("%s %s: HTTP %s: %s", method, key, resp.Status, strings.TrimSpace(string(b)))
}

// sign adds AWS Signature Version 4 headers (x-amz-date,
// x-amz-content-sha256, x-amz-security-token, Authorization) to req for
// the s3 service; anonymous stores send requests unsigned.
func (s *s3Store) sign(req *http.Request, body []byte, now time.Time) {
	if s.creds.id == "" {
		return
	}
	now = now.UTC()
	amzDate := now.Format("20060102T150405Z")
	day := now.Format("20060102")
	sum := sha256.Sum256(body)
	payload := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Date", amzDate)
	req.Header.Set("X-Amz-Content-Sha256", payload)
	if s.creds.token != "" {
		req.Header.Set("X-Amz-Security-Token", s.creds.token)
	}

	// Canonical headers: host, content-length of a body, and every
	// x-amz-* and content-type header, lower-case names, sorted, values
	// trimmed (the set the AWS SDK signs for these requests).
	hdrs := map[string]string{"host": req.URL.Host}
	if req.ContentLength > 0 {
		hdrs["content-length"] = strconv.FormatInt(req.ContentLength, 10)
	}
	for k, v := range req.Header {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "x-amz-") || lk == "content-type" {
			hdrs[lk] = strings.Join(strings.Fields(strings.Join(v, ",")), " ")
		}
	}
	names := make([]string, 0, len(hdrs))
	for k := range hdrs {
		names = append(names, k)
	}
	sort.Strings(names)
	var canonHdrs strings.Builder
	for _, k := range names {
		canonHdrs.WriteString(k + ":" + hdrs[k] + "\n")
	}
	signed := strings.Join(names, ";")
	canonical := strings.Join([]string{
		req.Method,
		req.URL.EscapedPath(),
		"", // object GET and PUT have no query string
		canonHdrs.String(),
		signed,
		payload,
	}, "\n")
	scope := day + "/" + s.region + "/s3/aws4_request"
	crSum := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(crSum[:])
	key := hmacSHA256([]byte("AWS4"+s.creds.secret), day)
	key = hmacSHA256(key, s.region)
	key = hmacSHA256(key, "s3")
	key = hmacSHA256(key, "aws4_request")
	sig := hex.EncodeToString(hmacSHA256(key, toSign))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+s.creds.id+"/"+scope+", SignedHeaders="+signed+", Signature="+sig)
}

func hmacSHA256(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// s3EscapePath percent-encodes every byte of p but the unreserved
// characters and '/', as SigV4's canonical URI for S3 requires.
func s3EscapePath(p string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-._~/", c) >= 0 {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	return b.String()
}
