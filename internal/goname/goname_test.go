package goname

import "testing"

func TestExported(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"customer_id": "CustomerID", "lookup_customer": "LookupCustomer", "http.post": "HTTPPost",
		"order_ids": "OrderIDs", "2fa-code": "X2faCode", "send-email": "SendEmail", "sku": "SKU",
		"max-results": "MaxResults", "_": "", "über_name": "ÜberName",
	} {
		if got := Exported(in); got != want {
			t.Errorf("Exported(%q) = %q, want %q", in, got, want)
		}
	}
}
