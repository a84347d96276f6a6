# The render guard's post-renderer as helm runs it (plugin.yaml): a client of the check the operator
# serves over a unix socket (src/steps/render-guard/render-guard-server.ts, which documents the exchange). It reads
# the rendered manifests from stdin, sends them with the token the operator registered for this
# release, and prints the checked objects only when the whole allowed reply arrived: exit 0. Anything
# else (a refusal, no operator, a short reply) prints nothing and exits 1, so helm applies nothing.
#
# Perl, not node: a node process per release cost ~70 ms of CPU, this one about 2. perl-base is
# Essential in Debian, so it is in the node:*-slim image and on every Debian machine. No module is
# loaded but strict: Socket.pm alone would cost 5 ms per release, so its Linux constants are spelled
# out below (the operator runs on Linux only: the image, the tests).
use strict;

sub AF_UNIX () { 1 }
sub SOCK_STREAM () { 1 }
sub SHUT_WR () { 1 }

# struct sockaddr_un: sa_family_t (unsigned short), then sun_path[108], NUL-terminated.
sub unix_address {
    my ($path) = @_;
    fail("socket path too long: $path") if length($path) > 107;
    return pack('S Z108', AF_UNIX, $path);
}

sub fail {
    print STDERR "eva render guard: $_[0]\n";
    exit 1;
}

sub write_all {
    my ($handle, $data) = @_;
    my $offset = 0;
    while ($offset < length $data) {
        my $written = syswrite($handle, $data, length($data) - $offset, $offset);
        fail("write: $!") unless defined $written;
        $offset += $written;
    }
}

# This process's time on the CPU and waiting for it, in ns (what the guard costs, reported with each release).
sub schedstat {
    open(my $stat, '<', '/proc/self/schedstat') or return (0, 0);
    my ($run, $wait) = split ' ', (<$stat> // '');
    return ($run // 0, $wait // 0);
}

my $socket_path = $ENV{EVA_RENDER_GUARD_SOCKET} // '';
my $token = $ENV{EVA_RENDER_GUARD_TOKEN} // '';
fail('EVA_RENDER_GUARD_SOCKET and EVA_RENDER_GUARD_TOKEN must come from the operator') if $socket_path eq '' || $token !~ /\A[0-9a-f]{64}\z/;

binmode STDIN;
binmode STDOUT;
my $manifests = do { local $/; <STDIN> } // '';

socket(my $guard, AF_UNIX, SOCK_STREAM, 0) or fail("socket: $!");
connect($guard, unix_address($socket_path)) or fail("cannot reach the operator's render guard at $socket_path: $!");
binmode $guard;
my ($run, $wait) = schedstat();
write_all($guard, "$token $run $wait\n" . $manifests);
shutdown($guard, SHUT_WR) or fail("shutdown: $!");
my $reply = do { local $/; <$guard> } // '';
close $guard;

if ($reply =~ /\Aallow (\d{1,10})\n/ && length($reply) == $+[0] + $1) {
    write_all(\*STDOUT, substr($reply, $+[0]));
    exit 0;
}
fail($reply =~ /\Arefuse\n(.*?)\n?\z/s ? $1 : 'the operator gave no complete answer (it may have stopped): nothing is applied');
