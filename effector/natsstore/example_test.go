package natsstore_test

import (
	"fmt"

	"github.com/beam-agents/toolreg/effector/natsstore"
)

// A store URL names the servers, the credentials and the bucket; printed,
// it hides the password, and so does every error ParseURL returns.
func ExampleParseURL() {
	u, err := natsstore.ParseURL("nats://effector:s3cret@nats-1:4222,nats-2,nats-3/toolreg")
	if err != nil {
		panic(err)
	}
	fmt.Println(u)
	fmt.Println(u.Servers())
	fmt.Println(u.Bucket)

	_, err = natsstore.ParseURL("nats://effector:s3cret/toolreg") // the host forgotten
	fmt.Println(err)
	// Output:
	// nats://effector:xxxxx@nats-1:4222,nats-2:4222,nats-3:4222/toolreg
	// nats://nats-1:4222,nats://nats-2:4222,nats://nats-3:4222
	// toolreg
	// natsstore: store URL "nats://effector:xxxxx/toolreg": host 1 of 1: the port is not a number from 1 to 65535
}
