/**
 * Where a charge is in the Stripe dashboard: `https://dashboard.stripe.com[/acct_…][/test]/payments/<id>`.
 * The dashboard's payment page takes the PaymentIntent when there is one, else the
 * charge. A connected account's charge opens in that account's view; a test-mode charge
 * (livemode false) in test mode. Ids are percent-encoded: they come from Stripe, and the
 * link must stay on the dashboard whatever they hold.
 */
export function dashboardPaymentUrl(charge: {
  id: string;
  account: string | null;
  paymentIntent: string | null;
  livemode: boolean | null;
}): string {
  const account = charge.account && charge.account !== 'platform' ? `/${encodeURIComponent(charge.account)}` : '';
  const mode = charge.livemode === false ? '/test' : '';
  return `https://dashboard.stripe.com${account}${mode}/payments/${encodeURIComponent(charge.paymentIntent ?? charge.id)}`;
}
