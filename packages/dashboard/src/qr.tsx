import { useMemo } from 'react';
import qrcode from 'qrcode-generator';

/**
 * A QR code as inline SVG elements (one path of dark modules): no image URL, no inline style, so
 * the dashboard's CSP needs nothing more.
 */
export function QrCode({ value, label, size = 232 }: { value: string; label: string; size?: number }) {
  const { count, d } = useMemo(() => {
    const qr = qrcode(0, 'M');
    qr.addData(value);
    qr.make();
    const count = qr.getModuleCount();
    let d = '';
    for (let row = 0; row < count; row++)
      for (let col = 0; col < count; col++) if (qr.isDark(row, col)) d += `M${col + 4} ${row + 4}h1v1h-1z`;
    return { count, d };
  }, [value]);
  const side = count + 8; // a quiet zone of four modules on each side
  return (
    <svg
      className="qr"
      role="img"
      aria-label={label}
      width={size}
      height={size}
      viewBox={`0 0 ${side} ${side}`}
      shapeRendering="crispEdges"
    >
      <rect width={side} height={side} fill="#fff" />
      <path d={d} fill="#000" />
    </svg>
  );
}
