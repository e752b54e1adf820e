//go:build gotpu_gcs

package cache

import _ "gocloud.dev/blob/gcsblob" // gs://bucket (Google Cloud Storage)
