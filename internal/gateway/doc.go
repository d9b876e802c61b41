// Package gateway is forkbomb's hosted side: a small HTTP server that keeps
// workspaces, API keys (stored only as HMACs), integer micro-dollar
// balances, and a metered proxy to the model providers. Credit enters only
// from a verified on-chain burn or a grant a person records; every debit is
// one conditional UPDATE and the database's CHECK constraint refuses a
// negative balance, so no interleaving of requests — on one server or
// several sharing a PostgreSQL — can spend money a workspace does not have.
//
// Everything a client sends is hostile: only a burn's signature comes from
// the client (the rest is read from the chain), errors are fixed texts that
// name a reason and never carry upstream text, URLs, keys or stack traces.
package gateway
