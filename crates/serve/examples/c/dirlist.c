/*
 * dirlist.c — serve a directory with HTML listings from C; a callback adds one
 * dynamic page (/_stats, the live counters as JSON) and lets every other request fall
 * back to the static files by returning 0. Typing "r" + Enter restarts the server
 * on the same port.
 *
 *   ./dirlist DIR [PORT]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perflab_serve.h"

static int stats_page(const perflab_request *req, perflab_response *resp, void *user) {
    if (strcmp(req->path, "/_stats") != 0) {
        return 0; /* static file or listing */
    }
    perflab_stats st;
    if (perflab_server_stats((const perflab_server *)user, &st) != 0) {
        return 0;
    }
    char body[256];
    int n = snprintf(body, sizeof body,
                     "{\"accepted\":%llu,\"active\":%llu,\"requests\":%llu}\n",
                     (unsigned long long)st.accepted, (unsigned long long)st.active,
                     (unsigned long long)st.requests);
    perflab_response_add_header(resp, "Content-Type", "application/json");
    perflab_response_set_body(resp, body, (size_t)n);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: dirlist DIR [PORT]\n");
        return 2;
    }
    unsigned port = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 8080;
    perflab_server *s = perflab_server_new();
    if (perflab_server_set_root(s, argv[1]) != 0 ||
        perflab_server_set_port(s, (uint16_t)port) != 0 ||
        perflab_server_set_accept(s, "reuseport") != 0 ||
        perflab_server_set_handler(s, stats_page, s) != 0 ||
        perflab_server_start(s) != 0) {
        fprintf(stderr, "dirlist: %s\n", perflab_last_error());
        perflab_server_free(s);
        return 1;
    }
    printf("listening on http://127.0.0.1:%u/\n", (unsigned)perflab_server_local_port(s));
    fflush(stdout);
    int c;
    while ((c = getchar()) != EOF) {
        if (c == 'r') {
            if (perflab_server_restart(s) != 0) {
                fprintf(stderr, "dirlist: restart: %s\n", perflab_last_error());
                break;
            }
            printf("restarted on port %u\n", (unsigned)perflab_server_local_port(s));
            fflush(stdout);
        }
    }
    perflab_server_stop(s);
    perflab_server_free(s);
    return 0;
}
