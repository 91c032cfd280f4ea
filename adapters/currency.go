package adapters

import "strings"

// minorDigits is the ISO 4217 minor unit of each active currency: how many
// digits an amount has after the point. Every amount in the contract is
// in minor units, so this one table is what turns them into a target's
// decimal strings and into figures for people.
var minorDigits = func() map[string]int {
	m := map[string]int{}
	for digits, codes := range []string{
		0: "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX VND VUV XAF XOF XPF",
		2: "AED AFN ALL AMD AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BRL BSD BTN BWP BYN BZD " +
			"CAD CDF CHF CNY COP CRC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD " +
			"GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT LAK LBP LKR LRD LSL MAD " +
			"MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD PAB PEN PGK PHP " +
			"PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS " +
			"TMT TOP TRY TTD TWD TZS UAH USD UYU UZS VES WST XCD XCG YER ZAR ZMW ZWG",
		3: "BHD IQD JOD KWD LYD OMR TND",
	} {
		for _, c := range strings.Fields(codes) {
			m[c] = digits
		}
	}
	return m
}()

// MinorDigits returns the number of digits after the point of the
// upper-case ISO 4217 currency code, and false for a code that is no
// active currency.
func MinorDigits(code string) (int, bool) {
	d, ok := minorDigits[code]
	return d, ok
}
