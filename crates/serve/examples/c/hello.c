/*
 * hello.c — the smallest C embedding of perflab-serve: a callback answers every
 * request with a greeting.
 *
 *   cc -I crates/serve/include hello.c -L target/release -lperflab_serve -o hello
 *   ./hello [PORT]          (PORT 0: chosen by the OS)
 *
 * Prints "listening on http://127.0.0.1:PORT/" and serves until stdin is closed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perflab_serve.h"

/* Runs on worker threads, concurrently: uses only its own stack. */
static int greet(const perflab_request *req, perflab_response *resp, void *user) {
    (void)user;
    char body[512];
    int n = snprintf(body, sizeof body, "Hello from C! %s %s\n", req->method, req->path);
    if (n < 0) {
        return 0;
    }
    if ((size_t)n >= sizeof body) {
        n = (int)sizeof body - 1;
    }
    perflab_response_add_header(resp, "Content-Type", "text/plain; charset=utf-8");
    perflab_response_set_body(resp, body, (size_t)n);
    return 1;
}

int main(int argc, char **argv) {
    unsigned port = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 8080;
    perflab_server *s = perflab_server_new();
    if (perflab_server_set_port(s, (uint16_t)port) != 0 ||
        perflab_server_set_workers(s, 2) != 0 ||
        perflab_server_set_handler(s, greet, NULL) != 0 ||
        perflab_server_start(s) != 0) {
        fprintf(stderr, "hello: %s\n", perflab_last_error());
        perflab_server_free(s);
        return 1;
    }
    printf("listening on http://127.0.0.1:%u/\n", (unsigned)perflab_server_local_port(s));
    fflush(stdout);
    while (getchar() != EOF) {
        /* serve until stdin reaches end of file */
    }
    int rc = perflab_server_stop(s);
    perflab_server_free(s);
    return rc == 0 ? 0 : 1;
}
