/*
 * pause.c - the pod sandbox ("pause") process of the test node that
 * `KUBELET=true test/cluster/up.sh` runs.
 *
 * containerd starts one per pod to hold the pod's namespaces. No image
 * registry is reachable here, so up.sh builds this as a static binary into
 * an image FROM scratch and imports it. It sleeps until SIGTERM or SIGINT
 * and then exits 0; as PID 1 of the pod it also reaps any orphaned child
 * that is reparented to it.
 */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig)
{
	(void)sig;
	_exit(0);
}

static void on_child(int sig)
{
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(void)
{
	struct sigaction stop = {.sa_handler = on_stop};
	struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};
	sigemptyset(&stop.sa_mask);
	sigemptyset(&child.sa_mask);
	if (sigaction(SIGINT, &stop, NULL) != 0 || sigaction(SIGTERM, &stop, NULL) != 0 ||
	    sigaction(SIGCHLD, &child, NULL) != 0)
		return 1;
	for (;;)
		pause();
}
