package goname

import "testing"

func TestExported(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"customer_id": "CustomerID", "lookup_customer": "LookupCustomer", "http.post": "HTTPPost",
		"order_ids": "OrderIDs", "2fa-code": "X2faCode", "send-email": "SendEmail", "sku": "SKU",
		"max-results": "MaxResults", "_": "", "über_name": "ÜberName",
		"send_sms": "SendSMS", "url": "URL", "callback_urls": "CallbackURLs", "api_key": "APIKey",
		"uuids": "UUIDs", "json_rpc": "JSONRPC", "ips": "IPs", "status": "Status", "bus": "Bus",
		"dns": "DNS", "https_url": "HTTPSURL", "ids": "IDs", "xs": "Xs", "s": "S",
	} {
		if got := Exported(in); got != want {
			t.Errorf("Exported(%q) = %q, want %q", in, got, want)
		}
	}
}
