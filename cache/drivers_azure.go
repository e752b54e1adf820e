//go:build gotpu_azure

package cache

import _ "gocloud.dev/blob/azureblob" // azblob://container (Azure Blob Storage)
