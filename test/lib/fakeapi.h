/*
 * fakeapi.h - responses of a Kubernetes API server about ConfigMaps in
 * namespace "ns", as literal HTTP for fakesrv scripts: a list page, watch
 * events and bookmarks, error Statuses in a stream or as the response.
 * Each response closes its connection (fakesrv answers one request per
 * connection).
 */
#ifndef STEADFAST_TEST_FAKEAPI_H
#define STEADFAST_TEST_FAKEAPI_H

#define HDR "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
#define CM(name, uid, rv)                                                                          \
	"{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name             \
	"\",\"namespace\":\"ns\",\"uid\":\"" uid "\",\"resourceVersion\":\"" rv "\"}}"
#define LIST(rv, cont, items)                                                                      \
	HDR "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":" \
	    "\"" rv "\",\"continue\":\"" cont "\"},\"items\":[" items "]}"
#define EV(type, obj) "{\"type\":\"" type "\",\"object\":" obj "}\n"
#define BOOKMARK(rv)                                                                               \
	EV("BOOKMARK", "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{"              \
	               "\"resourceVersion\":\"" rv "\"}}")
#define STATUS_EV(code, reason)                                                                    \
	EV("ERROR",                                                                                \
	   "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","                    \
	   "\"message\":\"test " reason "\",\"reason\":\"" reason "\",\"code\":" #code "}")
/* The WatchList's last initial event. */
#define END_BOOKMARK(rv)                                                                           \
	EV("BOOKMARK", "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{"              \
	               "\"resourceVersion\":\"" rv "\",\"annotations\":{\"k8s.io/"                 \
	               "initial-events-end\":\"true\"}}}")
#define STATUS_RESP(code, text, reason)                                                            \
	"HTTP/1.1 " #code " " text                                                                 \
	"\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"                          \
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"test\","  \
	"\"reason\":\"" reason "\",\"code\":" #code "}"

#endif
