// Plain words beside the core's message when a service CIDR is refused.
// The message itself is the core's (kube-apiserver's wording); this only
// says what it means for someone choosing a range.

const RULES = [
  [/more than two entries/, 'A cluster has at most two service ranges: one IPv4 and one IPv6, separated by a comma (dual-stack).'],
  [/must be of different IP family/, 'Two ranges are allowed only for dual-stack: one IPv4 and one IPv6, not two of the same kind.'],
  [/is not a valid cidr|is not an ip net/, 'That is not a CIDR. Write an address, a slash and a prefix length, for example 10.96.0.0/12 or fd00:10:96::/112.'],
  [/IPv4-mapped IPv6/, 'Use a plain IPv4 range (10.96.0.0/12) or a real IPv6 range, not IPv4 written inside IPv6.'],
  [/at least 8 IP addresses/, 'Too small: the first address goes to the kubernetes Service and the network and broadcast addresses are never used, so a range needs at least 8 addresses (/29 for IPv4, /125 for IPv6).'],
  [/shortest allowed prefix length for service CIDR is 64/, 'Too big: an IPv6 service range can be at most a /64. Use a longer prefix such as /112.'],
  [/overlaps the (loopback|link-local|multicast)/, 'Those addresses have a special meaning on every machine (loopback, link-local or multicast): a ClusterIP there would never be routed to a Service.'],
  [/overlaps the pod CIDR/, 'This playground\'s pods use 10.244.0.0/16. If ClusterIPs and pod IPs shared addresses, a packet to one could not be told from a packet to the other. Pick a range outside it.'],
  [/contains the node IP/, 'The node itself (192.168.49.2) is inside this range: traffic to the node would be taken for traffic to a Service. Pick a range that leaves it out.'],
];

/** What a refused --service-cluster-ip-range means, in plain words. */
export function explainCidrError(message) {
  for (const [re, text] of RULES) if (re.test(message)) return text;
  return 'The range was refused; the message above is the API server\'s reason.';
}
